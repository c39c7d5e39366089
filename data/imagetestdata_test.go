package data

// gopherWebP and gopherPNG are the same 2-colour picture, a lossless WebP
// and a PNG: golang.org/x/image's testdata/gopher-doc.1bpp.lossless.webp
// and gopher-doc.1bpp.png (BSD licence, The Go Authors), base64-encoded.
const (
	gopherWebP = "UklGRrIBAABXRUJQVlA4TKUBAAAvSsAYAA8w//M///MfeJAkbXvaSG7m8Q3GfYSBJekwQztm/IcZ" +
		"lgwnmWImn2BK7aFmBtnVir6q//8VOkFE/xm4baTIu8c48ArEo6+B3zFKYln3pqClSCKX0begFTAX" +
		"FOLXHSyF8cCNcZEG4OywuA4KVVfJCiArU7GAgJI8+lJP/OKMT/fBAjevg1cYB7YVkFuWga2lyPi5" +
		"I0HFy5YTpWIHg0RZpkniRVW9odHAKOwosWuOGdxIyn2OvaCDvhg/we6TwadPBPbqBV58MsLmMJ8y" +
		"ZnOWk8SRz4N+QoyPL+MnamzMvcE1rHNEr91F9GKZPVUcS9w7PhhH36suB9qPeYb/oLk6cuTiJ0wO" +
		"K3m5h1cKjW6EVZCYMK7dxcKCBdgP9HkKr9gkAO2P8GKZGWVdIAatQa+1IDpt6qyorVwdy01xdW8J" +
		"kfk6xjEXmVQQ+HQdFr6OKhIN34dXWq0+0qr6EJSCeeVLH9+gvGTLyqM65PQ44ihzlTXxQKjKbAvs" +
		"hXgir7Lil9w4L2bvMycmjQcqXaMCO6BlY28i+FOLzbfI1vEqxAhotocAAA=="
	gopherPNG = "iVBORw0KGgoAAAANSUhEUgAAAEsAAABkCAIAAABB1lpeAAADyUlEQVR4nOxc2Y4jIQwkUf7/l7Mj" +
		"oUUEjF0+ODrpeljt9NCYwidHz+v9fqevxnP3AKYjjOHj8cj/ZkR168cjxEoZStu94OV8v+H2x6d5" +
		"Uv+Y2ZYna8i7GPajT9246zZbrNdopb3qtK9oXzfDwpBUne31BjOo6qzUoLoejTfW/TjnjoSC4Qzx" +
		"6TM41d3mh35BkJWGqI7scxSWGD2rBYlvesTwemB+G+irnJX6p7B/C0wYvQ7NGDLU0vtrjzQjgwre" +
		"2BK6e+cmZQi9YPT6t0RB/gLoScrLPeJByBN7ikH25V5IfTfUIRiBnHG1Vn7pMDYtffghU1KSv4pK" +
		"G+Qsr8j4IS6Ko2gvtme0plHFQDMySVJEQKTBB2GTZMD7P5JjZiEdanv3t2/msV9Y45Brmj5tjITh" +
		"5StJadLan2YoejwThMyVDbkDEpwtaql8kZFl17Ne/j/SMNlhz6omH6LMliFCrx8Bb2BlUpiemdeT" +
		"L4C/tB2NlguiSdfK79v0z/kfcSiyBTk4PEeb474zA6MMnfQKtCT9BcazF29ettogeqYz47c61Jq7" +
		"wT0MI/YEVdlKR6ZIDhE8lrHNi02NQ4bIKdKo1lEdP4mJtBZnIEkwJMdn6HrSK9puBSsNqe4DYTBv" +
		"gWFjqyqjNQchEaq5pitv83rXMMTsXcVMxB603iisD8kQGl4cM+L82HZTAVxzjoC3tzM0hx9/xFKp" +
		"mmaoGoRhxCs3ewg/JDe8SP8uD3GHDHddEbQOmRptlBJETeZZW0wv8eeHdRDPT8DNJcNJwTzyilNu" +
		"cAOCLPqQLJeUC05wUgSGpRd8gtfbIQ8uW+wqR2MlQvlwjVomTaXsh4utLlyc9+ZeICZN5YVv0IIz" +
		"Iq+AIwazExfWIYifZ3jC3swI4I7ehf0wJtJ8AW6G18fN8OxwiuDC2QLEz1vpyfkQhKzDGaclKwFZ" +
		"6bGjRzAllh41IxzDXXu4OJCTNuiO8MkkRShuDOFtjpqRsHx4zll/g6PdDIF4EKC7uRcwomiIGvr5" +
		"qq2G5zr5bDADu3X4icPVSI7NosMzSY7SlfGbmdNIlmPc3sosOjyQJHPz7qDTNSeGN33NNY3hGvsM" +
		"iKufDbe+AhFwbsH3vpckaERGhs0tFNXF7hDgPhLzF3gM9338AAVZGDbO3WwFLOCp2ltx1aWkpNl2" +
		"q906MlopL6YnGaJSm3WsWOOD1xPr9v3tRvM4V9Q0o8uYozZJPykMVldt4AX2QMvavAIuH+TMw73G" +
		"vz6OYDh1c+QIhsn0YQOIUximz0+8AnEQw/RlX3Ytw78AAAD//5xi0QNyi0eHAAAAAElFTkSuQmCC"
)

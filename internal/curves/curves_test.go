package curves_test

import (
	"fmt"
	"image"
	_ "image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/curves"
)

// decodePNG checks that path holds a PNG image and returns its size.
func decodePNG(t *testing.T, path string) image.Config {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	require.NoError(t, err)
	require.Equal(t, "png", format)
	return cfg
}

// lossCurve returns a decreasing curve of n points, one per step, 100
// steps per epoch.
func lossCurve(n int) []curves.Point {
	pts := make([]curves.Point, n)
	for i := range pts {
		pts[i] = curves.Point{Step: i + 1, Epoch: float64(i+1) / 100, Value: 2 / math.Sqrt(float64(i+1))}
	}
	return pts
}

func TestRender(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		panels []curves.Panel
		opts   curves.Options
		w, h   int
	}{
		{
			name: "loss and accuracy",
			panels: []curves.Panel{
				{Title: "loss", YLabel: "cross-entropy", Series: []curves.Series{
					{Name: "train", Points: lossCurve(500)},
					{Name: "test", Points: []curves.Point{{Step: 100, Epoch: 1, Value: 0.6}, {Step: 200, Epoch: 2, Value: 0.5}}},
				}},
				{Title: "accuracy", YLabel: "accuracy", Series: []curves.Series{
					{Name: "train", Points: []curves.Point{{Step: 100, Epoch: 1, Value: 0.8}, {Step: 200, Epoch: 2, Value: 0.85}}},
					{Name: "test", Points: []curves.Point{{Step: 100, Epoch: 1, Value: 0.79}, {Step: 200, Epoch: 2, Value: 0.83}}},
				}},
			},
			w: curves.DefaultWidth, h: curves.DefaultHeight,
		},
		{
			name:   "epoch axis and custom size",
			panels: []curves.Panel{{Title: "loss", X: curves.XEpoch, Series: []curves.Series{{Name: "train", Points: lossCurve(30)}}}},
			opts:   curves.Options{Width: 640, Height: 480},
			w:      640, h: 480,
		},
		{
			name: "empty series and empty panel",
			panels: []curves.Panel{
				{Title: "loss", Series: []curves.Series{{Name: "train"}, {Name: "test", Points: []curves.Point{}}}},
				{Title: "accuracy"},
			},
			w: curves.DefaultWidth, h: curves.DefaultHeight,
		},
		{
			name:   "single point",
			panels: []curves.Panel{{Title: "loss", Series: []curves.Series{{Name: "test", Points: []curves.Point{{Step: 7, Value: 0.5}}}}}},
			w:      curves.DefaultWidth, h: curves.DefaultHeight,
		},
		{
			name: "NaN and Inf values",
			panels: []curves.Panel{{Title: "loss", X: curves.XEpoch, Series: []curves.Series{
				{Name: "diverged", Points: []curves.Point{{Step: 1, Epoch: 0.1, Value: 1}, {Step: 2, Epoch: 0.2, Value: nan}, {Step: 3, Epoch: 0.3, Value: inf}, {Step: 4, Epoch: nan, Value: 0.5}, {Step: 5, Epoch: 0.5, Value: 0.4}}},
				{Name: "all NaN", Points: []curves.Point{{Value: nan}, {Value: math.Inf(-1)}}},
			}}},
			w: curves.DefaultWidth, h: curves.DefaultHeight,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "curves.png")
			require.NoError(t, curves.Render(path, tt.panels, tt.opts))
			cfg := decodePNG(t, path)
			assert.Equal(t, tt.w, cfg.Width)
			assert.Equal(t, tt.h, cfg.Height)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file is left behind")
		})
	}
}

func TestRenderReplacesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "curves.png")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	panels := []curves.Panel{{Title: "loss", Series: []curves.Series{{Name: "train", Points: lossCurve(10)}}}}
	require.NoError(t, curves.Render(path, panels, curves.Options{Width: 300, Height: 200}))
	cfg := decodePNG(t, path)
	assert.Equal(t, 300, cfg.Width)
	assert.Equal(t, 200, cfg.Height)
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	panels := []curves.Panel{{Title: "loss"}}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name   string
		path   string
		panels []curves.Panel
		opts   curves.Options
		want   []string
	}{
		{name: "missing folder", path: filepath.Join(missing, "c.png"), panels: panels, want: []string{"folder " + missing}},
		{name: "parent is a file", path: filepath.Join(file, "c.png"), panels: panels, want: []string{"folder " + file}},
		{name: "no panels", path: filepath.Join(dir, "c.png"), want: []string{"no panels"}},
		{name: "empty path", panels: panels, want: []string{"empty output path"}},
		{name: "negative size", path: filepath.Join(dir, "c.png"), panels: panels, opts: curves.Options{Width: -1}, want: []string{"-1×700"}},
		{name: "bad axis", path: filepath.Join(dir, "c.png"), panels: []curves.Panel{{Title: "loss", X: 7}}, want: []string{`panel 0 ("loss")`, "XAxis(7)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := curves.Render(tt.path, tt.panels, tt.opts)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestReadMetrics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		want    []curves.Record
		wantErr string
	}{
		{
			name:    "numbers and kind",
			content: "{\"kind\":\"step\",\"step\":10,\"epoch\":0.5,\"loss\":1.25}\n\n{\"epoch\":1,\"test_loss\":0.5,\"note\":\"x\",\"ok\":true,\"lr\":null}\n",
			want: []curves.Record{
				{Kind: "step", Values: map[string]float64{"step": 10, "epoch": 0.5, "loss": 1.25}},
				{Values: map[string]float64{"epoch": 1, "test_loss": 0.5}},
			},
		},
		{
			name:    "truncated last line",
			content: "{\"step\":1,\"loss\":2}\n{\"step\":2,\"lo",
			want:    []curves.Record{{Values: map[string]float64{"step": 1, "loss": 2}}},
		},
		{
			name:    "last line without newline is kept when complete",
			content: "{\"step\":1}\n{\"step\":2}",
			want:    []curves.Record{{Values: map[string]float64{"step": 1}}, {Values: map[string]float64{"step": 2}}},
		},
		{name: "empty file", content: ""},
		{name: "bad line in the middle", content: "{\"step\":1}\n{\"step\":\n{\"step\":3}\n", wantErr: ":2: expected a JSON object"},
		{name: "bad last line with newline", content: "{\"step\":1}\n{\"step\":2}\nnot json\n", wantErr: ":3: expected a JSON object"},
		{name: "not an object", content: "[1, 2]\n", wantErr: ":1: expected a JSON object"},
		{name: "null line", content: "{\"step\":1}\nnull\n", wantErr: ":2: expected a JSON object, found null"},
		{name: "kind not a string", content: "{\"kind\":3}\n", wantErr: `:1: field "kind": expected a string, found 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "metrics.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			got, err := curves.ReadMetrics(path)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), path+tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReadMetricsMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.jsonl")
	_, err := curves.ReadMetrics(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
}

func TestSeriesOf(t *testing.T) {
	t.Parallel()
	records := []curves.Record{
		{Kind: "step", Values: map[string]float64{"step": 10, "epoch": 0.5, "loss": 1.5}},
		{Kind: "eval", Values: map[string]float64{"step": 20, "epoch": 1, "loss": 0.9, "accuracy": 0.7}},
		{Kind: "step", Values: map[string]float64{"step": 20, "epoch": 1, "loss": 1.2}},
		{Kind: "step", Values: map[string]float64{"step": 30, "epoch": 1.5}},
	}
	assert.Equal(t, curves.Series{Name: "train", Points: []curves.Point{{Step: 10, Epoch: 0.5, Value: 1.5}, {Step: 20, Epoch: 1, Value: 1.2}}},
		curves.SeriesOf("train", records, "step", "loss"))
	assert.Equal(t, curves.Series{Name: "test", Points: []curves.Point{{Step: 20, Epoch: 1, Value: 0.7}}},
		curves.SeriesOf("test", records, "eval", "accuracy"))
	assert.Len(t, curves.SeriesOf("all", records, "", "loss").Points, 3)
	assert.Empty(t, curves.SeriesOf("none", records, "step", "missing").Points)
}

// Example draws the loss and accuracy of a short run, read from a metrics
// file, into one PNG.
func Example() {
	dir, err := os.MkdirTemp("", "curves")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	metrics := filepath.Join(dir, "metrics.jsonl")
	lines := `{"kind":"train","step":100,"epoch":1,"loss":0.62,"accuracy":0.78}
{"kind":"test","step":100,"epoch":1,"loss":0.51,"accuracy":0.82}
{"kind":"train","step":200,"epoch":2,"loss":0.41,"accuracy":0.85}
{"kind":"test","step":200,"epoch":2,"loss":0.44,"accuracy":0.84}
`
	if err := os.WriteFile(metrics, []byte(lines), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	records, err := curves.ReadMetrics(metrics)
	if err != nil {
		fmt.Println(err)
		return
	}
	panels := []curves.Panel{
		{Title: "loss", YLabel: "cross-entropy", X: curves.XEpoch, Series: []curves.Series{
			curves.SeriesOf("train", records, "train", "loss"),
			curves.SeriesOf("test", records, "test", "loss"),
		}},
		{Title: "accuracy", YLabel: "accuracy", X: curves.XEpoch, Series: []curves.Series{
			curves.SeriesOf("train", records, "train", "accuracy"),
			curves.SeriesOf("test", records, "test", "accuracy"),
		}},
	}
	out := filepath.Join(dir, "curves.png")
	if err := curves.Render(out, panels, curves.Options{}); err != nil {
		fmt.Println(err)
		return
	}

	f, err := os.Open(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d records, %s image of %d×%d pixels\n", len(records), format, cfg.Width, cfg.Height)
	// Output: 4 records, png image of 1000×700 pixels
}

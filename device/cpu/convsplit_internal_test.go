package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
)

// These tests compare the convolution paths of conv2dIm2col (the GEMM
// writing straight into y, 1×1 convolutions without im2col, a single
// image split across the workers, the fused bias and activation) and the
// values-only max pooling with the kernels they replace.

// conv2dGeneric is the image-parallel convolution as it was before the
// fast paths: every group of images through im2col and a scratch GEMM
// output copied into y, then BiasAct as a separate pass.
func conv2dGeneric[T float](dev *Device, s convShape, act device.Activation, y, x, w, bias []T) {
	gi := s.imagesPerGEMM()
	sc := getScratch[T](s.ckk*s.l*gi + s.ocg*s.l*gi)
	defer putScratch(sc)
	col, out := sc.s[:s.ckk*s.l*gi], sc.s[s.ckk*s.l*gi:]
	for n0 := 0; n0 < s.N; n0 += gi {
		n1 := min(n0+gi, s.N)
		ld := (n1 - n0) * s.l
		for g := 0; g < s.Groups; g++ {
			convGroup(dev, s, col, out, x, w, n0, n1, g)
			for n := n0; n < n1; n++ {
				for oc := 0; oc < s.ocg; oc++ {
					copy(y[n*s.imgOut+(g*s.ocg+oc)*s.l:][:s.l], out[oc*ld+(n-n0)*s.l:][:s.l])
				}
			}
		}
	}
	if bias != nil || act != device.ActNone {
		biasActRows(act, y, y, bias, s.OutC, s.l, 0, s.N*s.OutC)
	}
}

// conv2dNaive is the reference loop of a convolution, in float64.
func conv2dNaive[T float](s convShape, x, w, bias []T) []float64 {
	y := make([]float64, s.N*s.imgOut)
	for n := 0; n < s.N; n++ {
		for oc := 0; oc < s.OutC; oc++ {
			g := oc / s.ocg
			for i := 0; i < s.oh; i++ {
				for j := 0; j < s.ow; j++ {
					var acc float64
					if bias != nil {
						acc = float64(bias[oc])
					}
					for c := 0; c < s.cg; c++ {
						for kh := 0; kh < s.KH; kh++ {
							for kw := 0; kw < s.KW; kw++ {
								h := i*s.StrideH - s.PadH + kh*s.DilH
								v := j*s.StrideW - s.PadW + kw*s.DilW
								if h < 0 || h >= s.H || v < 0 || v >= s.W {
									continue
								}
								acc += float64(x[((n*s.C+g*s.cg+c)*s.H+h)*s.W+v]) * float64(w[((oc*s.cg+c)*s.KH+kh)*s.KW+kw])
							}
						}
					}
					y[(n*s.OutC+oc)*s.l+i*s.ow+j] = acc
				}
			}
		}
	}
	return y
}

func convCase(n, c, h, w, oc, k, stride, pad, groups int) device.ConvParams {
	return device.ConvParams{N: n, C: c, H: h, W: w, OutC: oc, KH: k, KW: k, StrideH: stride, StrideW: stride,
		PadH: pad, PadW: pad, DilH: 1, DilW: 1, Groups: groups}
}

var convSplitCases = []device.ConvParams{
	convCase(1, 3, 64, 64, 16, 7, 2, 3, 1),  // a ResNet stem, bands of rows
	convCase(1, 16, 28, 28, 32, 3, 1, 1, 1), // same size, bands of rows
	convCase(1, 16, 28, 28, 32, 1, 1, 0, 1), // 1×1, bands of rows read from x
	convCase(1, 32, 7, 7, 96, 3, 1, 1, 1),   // blocks of output channels
	convCase(1, 64, 7, 7, 160, 1, 1, 0, 1),  // 1×1, blocks of output channels
	convCase(1, 32, 14, 14, 64, 1, 2, 0, 1), // 1×1 with stride 2
	convCase(1, 8, 20, 17, 12, 3, 2, 1, 2),  // groups, stride 2, odd sizes
	convCase(1, 8, 9, 9, 48, 3, 1, 1, 4),    // groups, blocks of output channels
	convCase(1, 6, 16, 16, 6, 1, 1, 0, 3),   // grouped 1×1
	convCase(2, 8, 24, 24, 16, 3, 2, 1, 1),  // two images
	convCase(3, 16, 14, 14, 24, 3, 1, 1, 1), // three images, one GEMM each
	convCase(5, 24, 6, 6, 20, 1, 1, 0, 1),   // several images per GEMM, 1×1
	convCase(4, 8, 10, 10, 12, 3, 1, 2, 2),  // several images per GEMM, groups
	convCase(1, 4, 5, 5, 3, 3, 1, 0, 1),     // tiny (serial)
	convCase(1, 64, 40, 40, 64, 3, 1, 1, 1), // large enough for several bands
	{N: 1, C: 8, H: 30, W: 31, OutC: 16, KH: 3, KW: 2, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1, DilH: 2, DilW: 1, Groups: 1},
}

func testConvSplit[T float](t *testing.T, dev *Device, rng *rand.Rand, p device.ConvParams) {
	s := newConvShape(p)
	x := randVals[T](rng, p.N*p.C*p.H*p.W, -2, 2)
	w := randVals[T](rng, p.OutC*s.ckk, -1, 1)
	bias := randVals[T](rng, p.OutC, -1, 1)
	ny := p.N * s.imgOut
	naive := conv2dNaive(s, x, w, nil)
	for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
		for _, b := range [][]T{nil, bias} {
			want, got := make([]T, ny), make([]T, ny)
			conv2dGeneric(dev, s, act, want, x, w, b)
			for i := range got {
				got[i] = T(math.NaN())
			}
			conv2dBiasAct(dev, s, act, got, x, w, b, nil, nil)
			scale := float64(s.ckk)
			msg := fmt.Sprintf("act %v, bias %v, %+v", act, b != nil, p)
			checkCloseRel(t, got, want, scale, msg)
			if act == device.ActNone && b == nil {
				for i, v := range naive {
					require.InDelta(t, v, float64(got[i]), 1e-4*scale, "%s: element %d against the reference loop", msg, i)
				}
			}
		}
	}
}

func TestConvFastPathsMatchGeneric(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, threads := range append(threadCounts, 3) {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range convSplitCases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				testConvSplit[float32](t, dev, rng, p)
				testConvSplit[float64](t, dev, rng, p)
			})
		}
	}
}

// TestConvSplitRandom runs random shapes of one or two images.
func TestConvSplitRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	dev := New()
	dev.SetThreads(2)
	for range 60 {
		groups := 1 + rng.IntN(3)
		k := 1 + rng.IntN(4)
		p := device.ConvParams{N: 1 + rng.IntN(2), C: groups * (1 + rng.IntN(8)), H: k + rng.IntN(30), W: k + rng.IntN(30),
			OutC: groups * (1 + rng.IntN(40)), KH: k, KW: 1 + rng.IntN(k), StrideH: 1 + rng.IntN(2), StrideW: 1 + rng.IntN(2),
			DilH: 1, DilW: 1, Groups: groups}
		p.PadH, p.PadW = rng.IntN(p.KH/2+1), rng.IntN(p.KW/2+1)
		t.Run(fmt.Sprintf("%+v", p), func(t *testing.T) {
			testConvSplit[float32](t, dev, rng, p)
		})
	}
}

func testMaxPoolValues[T float](t *testing.T, dev *Device, rng *rand.Rand, p device.PoolParams) {
	nx, ny := p.N*p.C*p.H*p.W, p.N*p.C*p.OutH()*p.OutW()
	for _, mode := range []string{"random", "ties", "specials"} {
		x := randVals[T](rng, nx, -1, 1)
		for i := range x {
			switch mode {
			case "ties":
				x[i] = T(rng.IntN(3) - 1)
			case "specials":
				switch rng.IntN(8) {
				case 0:
					x[i] = T(math.NaN())
				case 1:
					x[i] = T(math.Copysign(0, -1))
				case 2:
					x[i] = T(math.Inf(-1))
				}
			}
		}
		want, got := make([]T, ny), make([]T, ny)
		maxPoolRef(p, want, make([]int64, ny), x)
		for i := range got {
			got[i] = 42
		}
		maxPoolValues(dev, p, got, x)
		for i := range want {
			if !(got[i] == want[i] || (got[i] != got[i] && want[i] != want[i])) {
				t.Fatalf("%s %+v: output %d: got %v, want %v", mode, p, i, got[i], want[i])
			}
		}
	}
}

func TestMaxPoolValuesMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	cases := append([]device.PoolParams{
		{N: 1, C: 3, H: 1, W: 5, KH: 1, KW: 3, StrideH: 1, StrideW: 2, PadH: 0, PadW: 1},
		{N: 2, C: 2, H: 8, W: 7, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 0, PadW: 0},
		{N: 1, C: 2, H: 9, W: 9, KH: 5, KW: 5, StrideH: 2, StrideW: 3, PadH: 2, PadW: 2},
	}, poolFastCases...)
	for _, threads := range threadCounts {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range cases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				testMaxPoolValues[float32](t, dev, rng, p)
				testMaxPoolValues[float64](t, dev, rng, p)
			})
		}
	}
}

// BenchmarkConvSingleImage times ResNet-18's layers, a 1×1 layer and the
// stem of MobileNetV2 at batch 1: the image-parallel generic path against
// the path conv2dBiasAct takes.
func BenchmarkConvSingleImage(b *testing.B) {
	dev := New()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		name string
		p    device.ConvParams
	}{
		{"stem-7x7s2", convCase(1, 3, 224, 224, 64, 7, 2, 3, 1)},
		{"layer1-3x3", convCase(1, 64, 56, 56, 64, 3, 1, 1, 1)},
		{"layer2-3x3", convCase(1, 128, 28, 28, 128, 3, 1, 1, 1)},
		{"layer3-3x3", convCase(1, 256, 14, 14, 256, 3, 1, 1, 1)},
		{"layer4-3x3", convCase(1, 512, 7, 7, 512, 3, 1, 1, 1)},
		{"mbv2-1x1-112", convCase(1, 32, 112, 112, 16, 1, 1, 0, 1)},
		{"mbv2-stem", convCase(1, 3, 224, 224, 32, 3, 2, 1, 1)},
	} {
		s := newConvShape(c.p)
		x := randVals[float32](rng, c.p.N*s.imgIn, -1, 1)
		w := randVals[float32](rng, c.p.OutC*s.ckk, -1, 1)
		bias := randVals[float32](rng, c.p.OutC, -1, 1)
		y := make([]float32, c.p.N*s.imgOut)
		flop := float64(2 * len(y) * s.ckk)
		for _, impl := range []string{"generic", "fast"} {
			b.Run(c.name+"/"+impl, func(b *testing.B) {
				for b.Loop() {
					if impl == "fast" {
						conv2dBiasAct(dev, s, device.ActReLU, y, x, w, bias, nil, nil)
					} else {
						conv2dGeneric(dev, s, device.ActReLU, y, x, w, bias)
					}
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// stride2Cases are the convolutions TestIm2colStride2 and
// TestCol2imStride2 run on: kernels of 1 to 7, paddings of 0 to 3, odd
// and even widths, vertical strides of 1 to 3 and a vertical dilation, two
// groups.
var stride2Cases = []device.ConvParams{
	convCase(1, 3, 28, 28, 8, 3, 2, 1, 1),
	convCase(1, 2, 14, 14, 4, 1, 2, 0, 1),
	convCase(1, 4, 15, 13, 4, 1, 2, 0, 2), // 1×1: im2colSubsample
	convCase(1, 2, 1, 3, 2, 1, 2, 0, 1),
	convCase(1, 3, 15, 17, 4, 5, 2, 2, 1),
	convCase(1, 2, 9, 9, 4, 7, 2, 3, 1),
	convCase(1, 4, 8, 7, 4, 3, 2, 1, 2),
	convCase(1, 1, 2, 2, 1, 3, 2, 0, 1),
	{N: 1, C: 2, H: 13, W: 12, OutC: 2, KH: 3, KW: 3, StrideH: 3, StrideW: 2, PadH: 2, PadW: 1, DilH: 2, DilW: 1, Groups: 1},
	{N: 1, C: 2, H: 10, W: 11, OutC: 2, KH: 2, KW: 4, StrideH: 1, StrideW: 2, PadH: 0, PadW: 3, DilH: 1, DilW: 1, Groups: 1},
}

// TestIm2colStride2 checks im2colStride2 (and im2colSubsample, which
// takes the 1×1 cases without padding) against im2col's element loop
// (the path of float64) on the same values, and that nothing past a row
// of the column matrix is written.
func TestIm2colStride2(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var shapes []convShape
	for _, p := range stride2Cases {
		s := newConvShape(p)
		shapes = append(shapes, s)
		// conv2dSplit's bands: output rows r0… of the image, as the
		// convolution of the image shifted up.
		for r0 := 1; r0 < s.oh; r0 += 2 {
			b := s
			b.oh = min(2, s.oh-r0)
			b.l = b.oh * b.ow
			b.PadH -= r0 * s.StrideH
			shapes = append(shapes, b)
		}
	}
	for _, s := range shapes {
		p := s.ConvParams
		x := randSlice(rng, s.imgIn)
		x64 := make([]float64, len(x))
		for i, v := range x {
			x64[i] = float64(v)
		}
		ld := s.l + 3
		for g := range s.Groups {
			got := make([]float32, s.ckk*ld)
			for i := range got {
				got[i] = -9
			}
			want := make([]float64, s.ckk*ld)
			im2col(s, got, ld, x, g)
			im2col(s, want, ld, x64, g)
			for r := range s.ckk {
				for q := range ld {
					w := float32(want[r*ld+q])
					if q >= s.l {
						w = -9
					}
					if got[r*ld+q] != w {
						t.Fatalf("%+v group %d: row %d column %d = %g, want %g", p, g, r, q, got[r*ld+q], w)
					}
				}
			}
		}
	}
}

// TestCol2imStride2 checks col2imStride2 against col2im's element loop
// (the path of float64) on the same values, both adding to a dx that
// holds values already (col2imStride2 called directly: col2im takes it
// on some shapes only, see col2imPhases).
func TestCol2imStride2(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, p := range stride2Cases {
		s := newConvShape(p)
		ld := s.l + 3
		col := randSlice(rng, s.ckk*ld)
		col64 := make([]float64, len(col))
		for i, v := range col {
			col64[i] = float64(v)
		}
		for g := range s.Groups {
			got := randSlice(rng, s.imgIn)
			want := make([]float64, len(got))
			for i, v := range got {
				want[i] = float64(v)
			}
			col2imStride2(s, got, col, ld, g)
			col2im(s, want, col64, ld, g)
			for i := range got {
				if math.Abs(float64(got[i])-want[i]) > 1e-5 {
					t.Fatalf("%+v group %d: dx[%d] = %g, want %g", p, g, i, got[i], want[i])
				}
			}
		}
	}
}

// TestSmallPlaneImages checks the images per GEMM of small planes: the
// count that gives the busiest worker the fewest images, then the fewest
// empty columns.
func TestSmallPlaneImages(t *testing.T) {
	for _, c := range []struct{ n, l, nr, workers, want int }{
		{32, 49, 32, 2, 4}, // 8 GEMMs, 16 images each worker (3 and 5: 17, 6: 18)
		{32, 49, 32, 1, 5}, // one worker: 52 strips, 96 columns empty (3: 160, 4: 224)
		{32, 16, 32, 2, 8}, // 4 GEMMs of 128 columns
		{32, 36, 32, 2, 4}, // 16 images each (5: 17, 6 and 7: 18)
		{3, 100, 32, 2, 2}, // GEMMs of 2 and 1 images (3 or more: one worker)
		{64, 64, 32, 2, 2}, // 2 and 4 alike, both full strips: the first
		{32, 1, 32, 2, 16}, // at most 16 images
		{1, 49, 32, 2, 3},  // one image: at least 128 columns
		{32, 49, 16, 2, 4}, // strips of 16: 16 images each
	} {
		if got := smallPlaneImages(c.n, c.l, c.nr, c.workers); got != c.want {
			t.Errorf("%d planes of %d, strips of %d, %d workers: %d images, want %d", c.n, c.l, c.nr, c.workers, got, c.want)
		}
	}
}

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
)

// directCases: ResNet-20's and LeNet's layers, a 7×7 stride-2 stem, a
// dilated kernel, output channels not a multiple of the block, planes of
// one position, and asymmetric padding.
var directCases = []device.ConvParams{
	convCase(2, 16, 12, 12, 16, 3, 1, 1, 1),
	convCase(3, 1, 28, 28, 6, 5, 1, 2, 1),
	convCase(2, 6, 14, 14, 16, 5, 1, 0, 1),
	convCase(1, 3, 23, 21, 13, 7, 2, 3, 1),
	convCase(2, 16, 9, 9, 32, 3, 2, 1, 1),
	convCase(2, 5, 1, 1, 3, 3, 1, 1, 1),
	{N: 2, C: 4, H: 10, W: 11, OutC: 9, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 2, DilW: 2, Groups: 1},
	{N: 1, C: 7, H: 8, W: 13, OutC: 10, KH: 3, KW: 2, StrideH: 1, StrideW: 1, PadH: 0, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
}

// TestDirectMatchesReference runs the direct convolution, with bias and
// ReLU6, and (at unit stride) its input gradient against float64
// reference loops, on one to three workers.
func TestDirectMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(31, 32))
	for _, threads := range []int{1, 2, 3} {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range directCases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				s := newConvShape(p)
				x, w, bias := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.OutC)
				for i := range x {
					x[i] *= 4 // outputs past 6 too
				}
				y := make([]float32, s.N*s.imgOut)
				for i := range y {
					y[i] = float32(math.NaN())
				}
				conv2dDirect(dev, s, device.ActReLU6, y, x, w, bias)
				want := conv2dNaive(s, x, w, bias)
				scale := conv2dNaive(s, absSlice(x), absSlice(w), absSlice(bias))
				for i := range y {
					ref := min(max(want[i], 0), 6)
					if !(math.Abs(float64(y[i])-ref) <= 1e-6*scale[i]+1e-7) {
						t.Fatalf("forward: y[%d] = %g, want %g", i, y[i], ref)
					}
				}
				dyw := randSlice(rng, s.N*s.imgOut)
				dw := make([]float32, s.OutC*s.ckk)
				for i := range dw {
					dw[i] = float32(math.NaN())
				}
				conv2dDirectGradWeight(dev, s, dw, dyw, x)
				wantDw, scaleDw := convGradWeightNaive(s, dyw, x)
				for i := range dw {
					if !(math.Abs(float64(dw[i])-wantDw[i]) <= 1e-6*scaleDw[i]+1e-7) {
						t.Fatalf("weight gradient: dw[%d] = %g, want %g", i, dw[i], wantDw[i])
					}
				}

				if !s.gradInputIsConv() {
					if s.StrideH == 1 {
						t.Fatalf("unit stride, yet the input gradient is no convolution")
					}
					return
				}
				dy := randSlice(rng, s.N*s.imgOut)
				dx := make([]float32, s.N*s.imgIn)
				for i := range dx {
					dx[i] = float32(math.NaN())
				}
				conv2dDirectGradInput(dev, s, dx, dy, w)
				wantDx, scaleDx := convGradInputNaive(s, dy, w)
				for i := range dx {
					if !(math.Abs(float64(dx[i])-wantDx[i]) <= 1e-6*scaleDx[i]+1e-7) {
						t.Fatalf("input gradient: dx[%d] = %g, want %g", i, dx[i], wantDx[i])
					}
				}
			})
		}
	}
}

// convGradInputNaive is the input gradient of a one-group convolution and
// the sums of |dy·w| per element, in float64.
func convGradInputNaive(s convShape, dy, w []float32) (dx, scale []float64) {
	dx, scale = make([]float64, s.N*s.imgIn), make([]float64, s.N*s.imgIn)
	for n := range s.N {
		for oc := range s.OutC {
			for i := range s.oh {
				for j := range s.ow {
					g := float64(dy[(n*s.OutC+oc)*s.l+i*s.ow+j])
					for c := range s.C {
						for kh := range s.KH {
							for kw := range s.KW {
								h := i*s.StrideH - s.PadH + kh*s.DilH
								v := j*s.StrideW - s.PadW + kw*s.DilW
								if h < 0 || h >= s.H || v < 0 || v >= s.W {
									continue
								}
								at := ((n*s.C+c)*s.H+h)*s.W + v
								p := g * float64(w[((oc*s.C+c)*s.KH+kh)*s.KW+kw])
								dx[at] += p
								scale[at] += math.Abs(p)
							}
						}
					}
				}
			}
		}
	}
	return dx, scale
}

// convGradWeightNaive is the weight gradient of a one-group convolution
// and the sums of |dy·x| per element, in float64.
func convGradWeightNaive(s convShape, dy, x []float32) (dw, scale []float64) {
	dw, scale = make([]float64, s.OutC*s.ckk), make([]float64, s.OutC*s.ckk)
	for n := range s.N {
		for oc := range s.OutC {
			for i := range s.oh {
				for j := range s.ow {
					g := float64(dy[(n*s.OutC+oc)*s.l+i*s.ow+j])
					for c := range s.C {
						for kh := range s.KH {
							for kw := range s.KW {
								h := i*s.StrideH - s.PadH + kh*s.DilH
								v := j*s.StrideW - s.PadW + kw*s.DilW
								if h < 0 || h >= s.H || v < 0 || v >= s.W {
									continue
								}
								p := g * float64(x[((n*s.C+c)*s.H+h)*s.W+v])
								at := ((oc*s.C+c)*s.KH+kh)*s.KW + kw
								dw[at] += p
								scale[at] += math.Abs(p)
							}
						}
					}
				}
			}
		}
	}
	return dw, scale
}

// TestDirectGradWeightDeterministic requires the weight gradient to have
// the same bits on one, two and three workers.
func TestDirectGradWeightDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	s := newConvShape(convCase(37, 8, 9, 9, 8, 3, 1, 1, 1))
	x, dy := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.N*s.imgOut)
	var first []float32
	for threads := 1; threads <= 3; threads++ {
		dev := New()
		dev.SetThreads(threads)
		dw := make([]float32, s.OutC*s.ckk)
		conv2dDirectGradWeight(dev, s, dw, dy, x)
		if first == nil {
			first = dw
			continue
		}
		for i := range dw {
			if math.Float32bits(dw[i]) != math.Float32bits(first[i]) {
				t.Fatalf("%d workers: dw[%d] = %g, one worker gives %g", threads, i, dw[i], first[i])
			}
		}
	}
}

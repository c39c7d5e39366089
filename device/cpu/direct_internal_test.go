package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
)

// directCases: ResNet-20's and LeNet's layers, a 7×7 and a 3×3 stride-2
// stem, a dilated kernel, output channels not a multiple of the block,
// planes of one position, and asymmetric padding.
var directCases = []device.ConvParams{
	convCase(2, 16, 12, 12, 16, 3, 1, 1, 1),
	convCase(3, 1, 28, 28, 6, 5, 1, 2, 1),
	convCase(2, 6, 14, 14, 16, 5, 1, 0, 1),
	convCase(1, 3, 23, 21, 13, 7, 2, 3, 1),
	convCase(1, 3, 31, 30, 32, 3, 2, 1, 1), // MobileNetV2's stem, smaller
	convCase(2, 16, 9, 9, 32, 3, 2, 1, 1),
	convCase(2, 5, 1, 1, 3, 3, 1, 1, 1),
	{N: 2, C: 4, H: 10, W: 11, OutC: 9, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 2, DilW: 2, Groups: 1},
	{N: 1, C: 7, H: 8, W: 13, OutC: 10, KH: 3, KW: 2, StrideH: 1, StrideW: 1, PadH: 0, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
	convCase(3, 16, 7, 7, 16, 3, 1, 1, 1), // in place, a sparse tail of one output (directTails)
	convCase(2, 8, 17, 17, 8, 3, 1, 1, 1), // one output past 18 vectors
	convCase(2, 8, 1, 1, 8, 3, 1, 1, 1),   // the whole plane a sparse tail
	convCase(2, 8, 5, 10, 16, 3, 1, 1, 1), // 50 outputs: a sparse tail of two
}

// TestDirectMatchesReference runs the direct convolution, with bias and
// ReLU6, its weight gradient and (at unit stride) its input gradient
// against float64 reference loops, on one to three workers.
func TestDirectMatchesReference(t *testing.T) {
	t.Parallel()
	testConvPaths(t, rand.New(rand.NewPCG(31, 32)), directCases, convPaths{
		forward: func(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32) {
			conv2dDirect(dev, s, act, y, x, w, bias, nil)
		},
		gradWeight: conv2dDirectGradWeight,
		gradInput:  conv2dDirectGradInput,
	})
}

// convPaths are the kernels of one float32 convolution path.
type convPaths struct {
	forward    func(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32)
	gradWeight func(dev *Device, s convShape, dw, dy, x []float32)
	gradInput  func(dev *Device, s convShape, dx, dy, w []float32) // of unit-stride convolutions
}

// testConvPaths runs a path's forward convolution with bias and ReLU6 and
// without either, its weight gradient and (where the input gradient is a
// convolution, which unit stride must give) its input gradient on cases,
// against float64 reference loops, on one to three workers. Every output
// starts as NaN, so each must be written.
func testConvPaths(t *testing.T, rng *rand.Rand, cases []device.ConvParams, k convPaths) {
	nans := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.NaN())
		}
		return v
	}
	for _, threads := range []int{1, 2, 3} {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range cases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				s := newConvShape(p)
				x, w, bias := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.OutC)
				for i := range x {
					x[i] *= 4 // outputs past 6 too
				}
				y := nans(s.N * s.imgOut)
				k.forward(dev, s, device.ActReLU6, y, x, w, bias)
				want := conv2dNaive(s, x, w, bias)
				scale := conv2dNaive(s, absSlice(x), absSlice(w), absSlice(bias))
				for i := range want {
					want[i] = min(max(want[i], 0), 6)
				}
				requireConvClose(t, "forward", y, want, scale, 1e-6)
				plain := nans(s.N * s.imgOut) // no bias, no activation: the sums as they are
				k.forward(dev, s, device.ActNone, plain, x, w, nil)
				requireConvClose(t, "forward without bias", plain, conv2dNaive(s, x, w, nil), scale, 1e-6)

				dyw := randSlice(rng, s.N*s.imgOut)
				dw := nans(s.OutC * s.ckk)
				k.gradWeight(dev, s, dw, dyw, x)
				wantDw, scaleDw := convGradWeightNaive(s, dyw, x)
				requireConvClose(t, "weight gradient", dw, wantDw, scaleDw, 1e-6)

				if !s.gradInputIsConv() {
					if s.StrideH == 1 && s.StrideW == 1 {
						t.Fatalf("unit stride, yet the input gradient is no convolution")
					}
					return
				}
				dy := randSlice(rng, s.N*s.imgOut)
				dx := nans(s.N * s.imgIn)
				k.gradInput(dev, s, dx, dy, w)
				wantDx, scaleDx := convGradInputNaive(s, dy, w)
				requireConvClose(t, "input gradient", dx, wantDx, scaleDx, 1e-6)
			})
		}
	}
}

// convTapsNaive calls f(yi, xi, wi) for every product of a one-group
// convolution: output yi, input xi and weight wi, flat indices.
func convTapsNaive(s convShape, f func(yi, xi, wi int)) {
	for n := range s.N {
		for oc := range s.OutC {
			for i := range s.oh {
				for j := range s.ow {
					yi := (n*s.OutC+oc)*s.l + i*s.ow + j
					for c := range s.C {
						for kh := range s.KH {
							for kw := range s.KW {
								h := i*s.StrideH - s.PadH + kh*s.DilH
								v := j*s.StrideW - s.PadW + kw*s.DilW
								if h < 0 || h >= s.H || v < 0 || v >= s.W {
									continue
								}
								f(yi, ((n*s.C+c)*s.H+h)*s.W+v, ((oc*s.C+c)*s.KH+kh)*s.KW+kw)
							}
						}
					}
				}
			}
		}
	}
}

// convGradInputNaive is the input gradient of a one-group convolution and
// the sums of |dy·w| per element, in float64.
func convGradInputNaive(s convShape, dy, w []float32) (dx, scale []float64) {
	dx, scale = make([]float64, s.N*s.imgIn), make([]float64, s.N*s.imgIn)
	convTapsNaive(s, func(yi, xi, wi int) {
		p := float64(dy[yi]) * float64(w[wi])
		dx[xi] += p
		scale[xi] += math.Abs(p)
	})
	return dx, scale
}

// convGradWeightNaive is the weight gradient of a one-group convolution
// and the sums of |dy·x| per element, in float64.
func convGradWeightNaive(s convShape, dy, x []float32) (dw, scale []float64) {
	dw, scale = make([]float64, s.OutC*s.ckk), make([]float64, s.OutC*s.ckk)
	convTapsNaive(s, func(yi, xi, wi int) {
		p := float64(dy[yi]) * float64(x[xi])
		dw[wi] += p
		scale[wi] += math.Abs(p)
	})
	return dw, scale
}

// TestDirectRowsMatchesPhases requires runRows, which stores each block
// from the registers, to give the bits of runPhases, whatever blocks of
// which images each call gets, as workers get them: each call lays out
// only the phase rows its blocks read (fillPhaseRows). A first call on an
// input of NaNs leaves NaNs in the scratch buffer that the later calls
// reuse, and each later call gets a buffer of NaNs (poisonScratch), so a
// row they read but do not lay out shows.
func TestDirectRowsMatchesPhases(t *testing.T) {
	if !direct.Fast() {
		t.Skip("the direct kernels need AVX-512")
	}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, p := range []device.ConvParams{
		convCase(2, 3, 30, 30, 16, 7, 2, 3, 1), // resnet18's stem, smaller
		convCase(2, 4, 50, 47, 8, 5, 3, 2, 1),
		convCase(1, 6, 41, 40, 24, 3, 2, 1, 1),
		{N: 2, C: 4, H: 12, W: 17, OutC: 8, KH: 3, KW: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 0, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 4, H: 10, W: 21, OutC: 16, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0, DilH: 2, DilW: 2, Groups: 1},
		convCase(2, 4, 20, 19, 8, 5, 1, 1, 1), // rows sharing their padding: reads into the next row's zeros
		convCase(2, 4, 15, 18, 8, 3, 1, 2, 1),
	} {
		s := newConvShape(p)
		g := newDirectGeom(s)
		x := randSlice(rng, s.N*s.imgIn)
		for i := range x {
			x[i] *= 4 // outputs past 6 too
		}
		nan := make([]float32, len(x))
		for i := range nan {
			nan[i] = float32(math.NaN())
		}
		w, bias := randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.OutC)
		wp, held := g.packFilters(New(), w, nil)
		for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
			for _, b := range [][]float32{nil, bias} {
				a := directArgs{s: s, g: g, act: act, x: x, wp: wp, bias: b}
				if !a.storesRows() {
					t.Fatalf("%+v does not take runRows", p)
				}
				want := make([]float32, s.N*s.imgOut)
				a.y = want
				a.runPhases(0, s.N*g.ocBlocks)
				a.rows = rowsPlanFor(s.oh, s.ow, g.wq)
				blocks := a.rows.Blocks()
				tasks := s.N * blocks
				for _, cuts := range [][]int{{1}, {blocks / 2}, {blocks - 1, blocks + 1}, {1, 2, 3, blocks + 2, tasks - 1}} {
					got := make([]float32, len(want))
					a.x, a.y = nan, got
					a.runRows(0, tasks)
					a.x = x
					lo := 0
					for _, hi := range append(cuts, tasks) {
						if hi > lo && hi <= tasks {
							poisonScratch(g.inLen)
							a.runRows(lo, hi)
							lo = hi
						}
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%+v act %v bias %v, calls ending at %v: output %d = %v, want %v", p, act, b != nil, cuts, i, got[i], want[i])
						}
					}
				}
			}
		}
		held.release()
	}
}

// poisonScratch fills a scratch buffer of n elements with NaNs and gives it
// back, so that the next getScratch of that size most likely returns it:
// a kernel reading what it did not write then shows.
func poisonScratch(n int) {
	sc := getScratch[float32](n)
	full := sc.s[:cap(sc.s)]
	for i := range full {
		full[i] = float32(math.NaN())
	}
	putScratch(sc)
}

// TestDirectInPlaceMatchesPhases requires the direct convolution that
// reads and writes the planes in place to give the bits of the one through
// padded phases, with and without bias and activation, on the shapes it
// takes (ResNet-20's, odd sizes, dilation, a 5×5 kernel).
func TestDirectInPlaceMatchesPhases(t *testing.T) {
	if !direct.Fast() {
		t.Skip("the direct kernels need AVX-512")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	taken := 0
	for _, p := range []device.ConvParams{
		convCase(2, 16, 28, 28, 16, 3, 1, 1, 1),
		convCase(2, 32, 14, 14, 32, 3, 1, 1, 1),
		convCase(3, 64, 7, 7, 64, 3, 1, 1, 1),
		convCase(1, 3, 9, 13, 8, 3, 1, 1, 1),
		convCase(1, 6, 12, 12, 16, 5, 1, 2, 1),
		{N: 1, C: 4, H: 10, W: 11, OutC: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 2, DilW: 2, Groups: 1},
		{N: 1, C: 4, H: 10, W: 11, OutC: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 0, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
	} {
		s := newConvShape(p)
		g := newDirectGeom(s)
		if !useDirect(s) {
			t.Fatalf("%+v does not take the direct path", p)
		}
		x := randVals[float32](rng, s.N*s.imgIn, -2, 2)
		w := randVals[float32](rng, s.OutC*s.ckk, -1, 1)
		bias := randVals[float32](rng, s.OutC, -1, 1)
		wp, held := g.packFilters(New(), w, nil)
		for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
			for _, b := range [][]float32{nil, bias} {
				a := directArgs{s: s, g: g, act: act, x: x, wp: wp, bias: b}
				if !a.inPlace() {
					t.Fatalf("%+v does not go in place", p)
				}
				want, got := make([]float32, s.N*s.imgOut), make([]float32, s.N*s.imgOut)
				a.y = want
				a.runPhases(0, s.N*g.ocBlocks)
				a.y = got
				a.runInPlace(0, s.N*g.ocBlocks)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%+v act %v bias %v: output %d: in place %v, phases %v", p, act, b != nil, i, got[i], want[i])
					}
				}
				taken++
			}
		}
		held.release()
	}
	if taken == 0 {
		t.Fatal("no case ran")
	}
}

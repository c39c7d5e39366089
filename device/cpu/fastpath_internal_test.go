package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
)

// These tests compare the direct depthwise convolution, the max-pooling
// fast paths and the MaxScalar/MinScalar loops with the kernels they
// replace (im2col and GEMM, the reference window loop, unaryFunc), and the
// benchmarks time old against new in the same run.

func randVals[T float](rng *rand.Rand, n int, lo, hi float64) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(lo + (hi-lo)*rng.Float64())
	}
	return v
}

func depthwiseParams(n, c, h, w, k, stride, pad, dil int) device.ConvParams {
	return device.ConvParams{N: n, C: c, H: h, W: w, OutC: c, KH: k, KW: k, StrideH: stride, StrideW: stride,
		PadH: pad, PadW: pad, DilH: dil, DilW: dil, Groups: c}
}

var depthwiseCases = []device.ConvParams{
	depthwiseParams(1, 32, 112, 112, 3, 1, 1, 1), // MobileNetV2's first depthwise layer
	depthwiseParams(2, 16, 15, 15, 3, 2, 1, 1),
	depthwiseParams(3, 7, 9, 14, 3, 2, 1, 1),
	depthwiseParams(1, 5, 7, 7, 3, 1, 1, 1),
	depthwiseParams(2, 4, 12, 13, 5, 1, 2, 1),
	depthwiseParams(2, 4, 12, 13, 3, 1, 2, 2),
	depthwiseParams(1, 3, 13, 17, 3, 3, 0, 1),
	depthwiseParams(1, 3, 5, 6, 3, 2, 3, 1), // padding wider than the kernel
	depthwiseParams(2, 3, 2, 2, 3, 1, 1, 1),
	depthwiseParams(5, 3, 40, 40, 3, 1, 1, 1), // weight gradients in groups of 4 images and 1 (depthwiseGradArgs)
	depthwiseParams(7, 2, 44, 44, 3, 2, 1, 1), // and in groups of 2 strided ones
	{N: 1, C: 4, H: 9, W: 16, OutC: 4, KH: 2, KW: 5, StrideH: 1, StrideW: 3, PadH: 0, PadW: 2, DilH: 2, DilW: 1, Groups: 4},
	// Horizontal stride 2 (its phases split by direct.SplitColumns) with
	// other vertical strides, even padding and odd widths.
	{N: 2, C: 3, H: 11, W: 37, OutC: 3, KH: 3, KW: 3, StrideH: 3, StrideW: 2, PadH: 1, PadW: 2, DilH: 1, DilW: 1, Groups: 3},
	{N: 1, C: 2, H: 6, W: 65, OutC: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 2, PadH: 0, PadW: 0, DilH: 1, DilW: 1, Groups: 2},
}

// closeRel reports whether got and want agree to a relative 1e-5 of the
// largest magnitude of want (float32 rounding in another order).
func checkCloseRel[T float](t *testing.T, got, want []T, scale float64, msg string) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*scale || got[i] != got[i] {
			t.Fatalf("%s: element %d: got %v, want %v", msg, i, got[i], want[i])
		}
	}
}

func testDepthwise[T float](t *testing.T, dev *Device, rng *rand.Rand, p device.ConvParams) {
	s := newConvShape(p)
	require.True(t, s.depthwise())
	x := randVals[T](rng, p.N*p.C*p.H*p.W, -1, 1)
	w := randVals[T](rng, p.OutC*p.KH*p.KW, -1, 1)
	bias := randVals[T](rng, p.OutC, -0.5, 0.5)
	ny := p.N * p.OutC * s.l
	want, got := make([]T, ny), make([]T, ny)
	conv2dIm2col(dev, s, device.ActNone, want, x, w, nil, nil, nil)
	for i := range got {
		got[i] = T(math.NaN())
	}
	conv2dBiasAct(dev, s, device.ActNone, got, x, w, nil, nil, nil)
	scale := float64(p.KH * p.KW)
	checkCloseRel(t, got, want, scale, fmt.Sprintf("Conv2D %+v", p))
	for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
		// Scale the inputs so that ReLU6 clips.
		ref := make([]T, ny)
		for i := range ref {
			ref[i] = want[i] * 4
		}
		biasActRows(act, ref, ref, bias, p.OutC, s.l, 0, p.N*p.OutC)
		x4 := make([]T, len(x))
		for i, v := range x {
			x4[i] = v * 4
		}
		conv2dDepthwise(dev, s, act, got, x4, w, bias)
		checkCloseRel(t, got, ref, 4*scale, fmt.Sprintf("Conv2DBiasAct(%v) %+v", act, p))
	}
}

// testDepthwiseGrads checks the direct depthwise gradients against the
// im2col ones they replace.
func testDepthwiseGrads[T float](t *testing.T, dev *Device, rng *rand.Rand, p device.ConvParams) {
	s := newConvShape(p)
	x := randVals[T](rng, p.N*p.C*p.H*p.W, -1, 1)
	w := randVals[T](rng, p.OutC*p.KH*p.KW, -1, 1)
	dy := randVals[T](rng, p.N*p.OutC*s.l, -1, 1)
	want, got := make([]T, len(x)), make([]T, len(x))
	for i := range got {
		got[i] = T(math.NaN()) // every element must be written
	}
	conv2dGradInputIm2col(dev, s, want, dy, w)
	conv2dGradInput(dev, s, got, dy, w)
	checkCloseRel(t, got, want, float64(p.KH*p.KW), fmt.Sprintf("Conv2DGradInput %+v", p))
	wantW, gotW := make([]T, len(w)), make([]T, len(w))
	for i := range gotW {
		gotW[i] = T(math.NaN())
	}
	conv2dGradWeightIm2col(dev, s, wantW, dy, x)
	conv2dGradWeight(dev, s, gotW, dy, x)
	checkCloseRel(t, gotW, wantW, float64(p.N*s.l), fmt.Sprintf("Conv2DGradWeight %+v", p))
}

func TestDepthwiseMatchesIm2col(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, threads := range threadCounts {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range depthwiseCases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				testDepthwise[float32](t, dev, rng, p)
				testDepthwise[float64](t, dev, rng, p)
				testDepthwiseGrads[float32](t, dev, rng, p)
				testDepthwiseGrads[float64](t, dev, rng, p)
			})
		}
	}
}

// inPlaceOddCases are depthwise layers the in-place kernels take with
// uneven strides, paddings and dilations: a 5×3 kernel of stride 2 and
// vertical dilation 2, and a padding of 4 rows (whole output rows of
// padding) with a horizontal stride of 2.
var inPlaceOddCases = []device.ConvParams{
	{N: 1, C: 2, H: 12, W: 20, OutC: 2, KH: 5, KW: 3, StrideH: 2, StrideW: 2, PadH: 2, PadW: 1, DilH: 2, DilW: 1, Groups: 2},
	{N: 1, C: 2, H: 9, W: 9, OutC: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 2, PadH: 4, PadW: 1, DilH: 1, DilW: 1, Groups: 2},
}

// TestDepthwiseInPlaceMatchesPhases requires the kernels that read the
// plane in place (direct.SamePlan, direct.Stride2Plan) to give the bits of
// the padded phases' kernel, with and without bias and activation, on
// every case they take.
func TestDepthwiseInPlaceMatchesPhases(t *testing.T) {
	if !direct.Fast() {
		t.Skip("the in-place kernels need AVX-512")
	}
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	cases := slices.Concat([]device.ConvParams{
		depthwiseParams(1, 4, 56, 56, 3, 2, 1, 1),
		depthwiseParams(1, 4, 14, 14, 3, 1, 1, 1),
	}, inPlaceOddCases, depthwiseCases)
	taken := 0
	for _, p := range cases {
		s := newConvShape(p)
		if !inPlaceDepthwise(s) {
			continue
		}
		taken++
		x := randVals[float32](rng, p.N*p.C*p.H*p.W, -4, 4)
		w := randVals[float32](rng, p.C*p.KH*p.KW, -1, 1)
		bias := randVals[float32](rng, p.C, -1, 1)
		for _, act := range []device.Activation{device.ActNone, device.ActReLU, device.ActReLU6} {
			for _, b := range [][]float32{nil, bias} {
				want, got := make([]float32, p.N*p.C*s.l), make([]float32, p.N*p.C*s.l)
				depthwisePhases(&depthwiseArgs[float32]{s: s, act: act, y: want, x: x, w: w, bias: b}, 0, p.N*p.C)
				depthwiseInPlace(s, act, got, x, w, b, 0, p.N*p.C)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%+v act %v bias %v: output %d: in place %v, phases %v", p, act, b != nil, i, got[i], want[i])
					}
				}
			}
		}
	}
	if taken < 8 {
		t.Fatalf("only %d cases went in place", taken)
	}
}

// TestDepthwiseBandsMatchPlanes requires depthwiseBand to give, for any
// band of output rows, the bits depthwiseInPlace gives those rows of the
// whole planes, and conv2dDepthwise split by bands (a plane of
// bandPositions outputs or more, 1 to 3 workers) the bits of the planes
// path.
func TestDepthwiseBandsMatchPlanes(t *testing.T) {
	if !direct.Fast() {
		t.Skip("the in-place kernels need AVX-512")
	}
	t.Parallel()
	rng := rand.New(rand.NewPCG(23, 24))
	cases := slices.Concat([]device.ConvParams{
		depthwiseParams(1, 3, 56, 56, 3, 1, 1, 1),
		depthwiseParams(1, 3, 112, 112, 3, 2, 1, 1),
		depthwiseParams(1, 2, 113, 57, 3, 2, 1, 1),
		{N: 1, C: 3, H: 10, W: 7, OutC: 3, KH: 5, KW: 3, StrideH: 1, StrideW: 1, PadH: 4, PadW: 1, DilH: 2, DilW: 1, Groups: 3},
		{N: 1, C: 2, H: 2, W: 9, OutC: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 4, PadW: 1, DilH: 1, DilW: 1, Groups: 2}, // rows of padding only
	}, inPlaceOddCases, depthwiseCases)
	banded := 0
	for _, p := range cases {
		p.N = 1
		s := newConvShape(p)
		if !inPlaceDepthwise(s) || s.l == 0 {
			continue
		}
		x := randVals[float32](rng, p.C*p.H*p.W, -4, 4)
		w := randVals[float32](rng, p.C*p.KH*p.KW, -1, 1)
		bias := randVals[float32](rng, p.C, -1, 1)
		want := make([]float32, p.C*s.l)
		depthwiseInPlace(s, device.ActReLU6, want, x, w, bias, 0, p.C)
		for _, rows := range []int{1, 2, 3, (s.oh + 1) / 2} {
			got := make([]float32, p.C*s.l)
			for r0 := 0; r0 < s.oh; r0 += rows {
				r1 := min(r0+rows, s.oh)
				depthwiseBand(s, device.ActReLU6, got[r0*s.ow:], s.l, x, w, bias, r0, r1)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v, bands of %d rows: output %d: %v, whole planes %v", p, rows, i, got[i], want[i])
				}
			}
		}
		if !depthwiseBands(s) {
			continue
		}
		banded++
		for _, threads := range threadCounts {
			dev := New()
			dev.SetThreads(threads)
			got := make([]float32, p.C*s.l)
			conv2dDepthwise(dev, s, device.ActReLU6, got, x, w, bias)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v, %d workers: output %d: %v, whole planes %v", p, threads, i, got[i], want[i])
				}
			}
		}
	}
	if banded < 3 {
		t.Fatalf("only %d cases were split by bands", banded)
	}
}

// maxPoolRef is the reference loop of MaxPool2D over every plane.
func maxPoolRef[T float](p device.PoolParams, y []T, arg []int64, x []T) {
	oh, ow, il := p.OutH(), p.OutW(), p.H*p.W
	for plane := 0; plane < p.N*p.C; plane++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				o := (plane*oh+i)*ow + j
				y[o], arg[o] = maxPoolWindow(&p, x[plane*il:(plane+1)*il], i, j)
			}
		}
	}
}

var poolFastCases = []device.PoolParams{
	{N: 1, C: 64, H: 112, W: 112, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, // ResNet's stem
	{N: 2, C: 3, H: 9, W: 10, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 8, W: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 8, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2},
	{N: 2, C: 2, H: 11, W: 12, KH: 4, KW: 2, StrideH: 3, StrideW: 1, PadH: 2, PadW: 1},
	{N: 1, C: 3, H: 7, W: 7, KH: 7, KW: 7, StrideH: 1, StrideW: 1},
	{N: 1, C: 2, H: 3, W: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1},
	{N: 1, C: 2, H: 6, W: 6, KH: 2, KW: 2, StrideH: 2, StrideW: 2},
}

func testMaxPoolFast[T float](t *testing.T, dev *Device, rng *rand.Rand, p device.PoolParams) {
	nx, ny := p.N*p.C*p.H*p.W, p.N*p.C*p.OutH()*p.OutW()
	negZero := T(math.Copysign(0, -1))
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
					x[i] = negZero
				case 2:
					x[i] = 0
				case 3:
					x[i] = T(math.Inf(-1))
				}
			}
		}
		wantY, gotY := make([]T, ny), make([]T, ny)
		wantA, gotA := make([]int64, ny), make([]int64, ny)
		maxPoolRef(p, wantY, wantA, x)
		maxPool(dev, p, gotY, gotA, x)
		for i := range wantY {
			w, g := wantY[i], gotY[i]
			if is2x2(p) && ((w == 0 && g == 0) || (w != w && g != g)) {
				// maxPool2x2 (unchanged) picks +0 over an earlier -0 and the
				// first NaN of a window, the reference loop the last.
				continue
			}
			sameBits := math.Signbit(float64(w)) == math.Signbit(float64(g)) && (w == g || (w != w && g != g))
			if !sameBits || wantA[i] != gotA[i] {
				t.Fatalf("%s %+v: output %d: got %v at %d, want %v at %d", mode, p, i, g, gotA[i], w, wantA[i])
			}
		}
	}
}

func TestMaxPoolFastMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, threads := range threadCounts {
		dev := New()
		dev.SetThreads(threads)
		for _, p := range poolFastCases {
			t.Run(fmt.Sprintf("%d/%+v", threads, p), func(t *testing.T) {
				testMaxPoolFast[float32](t, dev, rng, p)
				testMaxPoolFast[float64](t, dev, rng, p)
			})
		}
	}
}

func testMaxMinScalar[T float](t *testing.T, dev *Device) {
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	vals := []float64{nan, negZero, 0, 1, -1, 6, 7, -7, inf, -inf, 0.1, 1e30, -1e-40, 5.999999}
	x := make([]T, 1000)
	for i := range x {
		x[i] = T(vals[i%len(vals)])
	}
	for _, op := range []device.UnaryOp{device.MaxScalar, device.MinScalar} {
		for _, s := range []float64{0, negZero, 6, 0.1, nan, -inf, 1e40} {
			got := make([]T, len(x))
			unary(dev, op, got, x, s)
			f := unaryFunc(op, s)
			for i, v := range x {
				want := T(f(float64(v)))
				g := got[i]
				if math.Signbit(float64(g)) != math.Signbit(float64(want)) || !(g == want || (g != g && want != want)) {
					t.Fatalf("op %d, s = %v: x = %v: got %v, want %v", op, s, v, g, want)
				}
			}
		}
	}
}

func TestMaxMinScalarMatchUnaryFunc(t *testing.T) {
	t.Parallel()
	dev := New()
	testMaxMinScalar[float32](t, dev)
	testMaxMinScalar[float64](t, dev)
}

// ---------------------------------------------------------------- benchmarks

func BenchmarkDepthwise(b *testing.B) {
	dev := New()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name string
		p    device.ConvParams
	}{
		{"112x112x32-s1", depthwiseParams(1, 32, 112, 112, 3, 1, 1, 1)},
		{"112x112x96-s2", depthwiseParams(1, 96, 112, 112, 3, 2, 1, 1)},
		{"14x14x384-s1", depthwiseParams(1, 384, 14, 14, 3, 1, 1, 1)},
		{"56x56x144-s1", depthwiseParams(1, 144, 56, 56, 3, 1, 1, 1)},
		{"28x28x192-s1", depthwiseParams(1, 192, 28, 28, 3, 1, 1, 1)},
		{"14x14x576-s1", depthwiseParams(1, 576, 14, 14, 3, 1, 1, 1)},
		{"7x7x960-s1", depthwiseParams(1, 960, 7, 7, 3, 1, 1, 1)},
		// mobilenet_v2 at batch 32: planes that stream from memory
		{"b32-112x112x96-s2", depthwiseParams(32, 96, 112, 112, 3, 2, 1, 1)},
		{"b32-56x56x144-s1", depthwiseParams(32, 144, 56, 56, 3, 1, 1, 1)},
		{"b32-14x14x384-s1", depthwiseParams(32, 384, 14, 14, 3, 1, 1, 1)},
		{"b32-28x28x192-s2", depthwiseParams(32, 192, 28, 28, 3, 2, 1, 1)},
	} {
		s := newConvShape(c.p)
		x := randVals[float32](rng, c.p.N*c.p.C*c.p.H*c.p.W, -1, 1)
		w := randVals[float32](rng, c.p.OutC*9, -1, 1)
		y := make([]float32, c.p.N*c.p.OutC*s.l)
		flop := float64(2 * len(y) * 9)
		for _, impl := range []string{"im2col", "direct"} {
			b.Run(c.name+"/"+impl, func(b *testing.B) {
				for b.Loop() {
					if impl == "direct" {
						conv2dBiasAct(dev, s, device.ActNone, y, x, w, nil, nil, nil)
					} else {
						conv2dIm2col(dev, s, device.ActNone, y, x, w, nil, nil, nil)
					}
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMaxPool3x3 times ResNet's stem pooling: the reference loop,
// the fast path with argmax, and the values-only path.
func BenchmarkMaxPool3x3(b *testing.B) {
	dev := New()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 32} {
		p := device.PoolParams{N: n, C: 64, H: 112, W: 112, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
		x := randVals[float32](rng, p.N*p.C*p.H*p.W, -1, 1)
		ny := p.N * p.C * p.OutH() * p.OutW()
		y, arg := make([]float32, ny), make([]int64, ny)
		for _, impl := range []string{"reference", "fast", "values"} {
			b.Run(fmt.Sprintf("N%d/%s", n, impl), func(b *testing.B) {
				for b.Loop() {
					switch impl {
					case "fast":
						maxPool(dev, p, y, arg, x)
					case "values": // no argmax, as in inference
						maxPoolValues(dev, p, y, x)
					default:
						dev.parallelFor(p.N*p.C, ny/(p.N*p.C)*9, func(lo, hi int) {
							q := p
							q.N, q.C = 1, 1
							il, ol := p.H*p.W, p.OutH()*p.OutW()
							for plane := lo; plane < hi; plane++ {
								maxPoolRef(q, y[plane*ol:(plane+1)*ol], arg[plane*ol:(plane+1)*ol], x[plane*il:(plane+1)*il])
							}
						})
					}
				}
				b.ReportMetric(float64(len(x)*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}

func BenchmarkClip(b *testing.B) {
	dev := New()
	rng := rand.New(rand.NewPCG(9, 10))
	x := randVals[float32](rng, 32*112*112, -8, 8) // MobileNetV2's first activation, batch 1
	y := make([]float32, len(x))
	for _, impl := range []string{"unaryFunc", "fast", "relu6"} {
		b.Run(impl, func(b *testing.B) {
			for b.Loop() {
				switch impl {
				case "unaryFunc": // the loop MaxScalar and MinScalar ran before
					for _, op := range []device.UnaryOp{device.MaxScalar, device.MinScalar} {
						s := []float64{0, 6}[op-device.MaxScalar]
						src := x
						if op == device.MinScalar {
							src = y
						}
						dev.parallelFor(len(y), 8, func(lo, hi int) {
							f := unaryFunc(op, s)
							for i, v := range src[lo:hi] {
								y[lo+i] = float32(f(float64(v)))
							}
						})
					}
				case "fast":
					unary(dev, device.MaxScalar, y, x, 0)
					unary(dev, device.MinScalar, y, y, 6)
				case "relu6":
					biasAct(dev, device.ActReLU6, y, x, nil, 1, 32, 112*112)
				}
			}
			b.ReportMetric(float64(len(x)*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// TestFillPhaseRows checks fillPhaseRows against the phases' definition
// (phase (rr, rc) row k column j holds input (k·StrideH+rr-PadH,
// j·StrideW+rc-PadW), zero outside the plane) on scratch full of NaNs,
// for ranges of phase rows: the rows in range hold no NaN, the others
// are left as they were. Stride 2 across in float32 zeroes only the
// padding around SplitColumns's values; the other cases clear whole rows.
func TestFillPhaseRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, p := range []device.ConvParams{
		depthwiseParams(1, 1, 224, 224, 3, 2, 1, 1), // mobilenet_v2's stem plane
		depthwiseParams(1, 1, 9, 9, 3, 2, 0, 1),
		depthwiseParams(1, 1, 10, 7, 7, 2, 3, 1),
		depthwiseParams(1, 1, 1, 1, 3, 2, 1, 1),
		depthwiseParams(1, 1, 6, 11, 5, 2, 2, 1),
		depthwiseParams(1, 1, 13, 8, 3, 3, 1, 1),
		{N: 1, C: 1, H: 12, W: 17, OutC: 1, KH: 3, KW: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 0, DilH: 1, DilW: 1, Groups: 1},
		{N: 1, C: 1, H: 12, W: 17, OutC: 1, KH: 3, KW: 3, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1, DilH: 1, DilW: 1, Groups: 1},
	} {
		s := newConvShape(p)
		g := newDWGeom(s)
		x := randVals[float32](rng, s.inPlane, -1, 1)
		rowsPer := g.phaseLen / g.wq
		want := func(ph, k, j int) float32 {
			rr, rc := ph/s.StrideW, ph%s.StrideW
			h, w := k*s.StrideH+rr-s.PadH, j*s.StrideW+rc-s.PadW
			if h < 0 || h >= s.H || w < 0 || w >= s.W {
				return 0
			}
			return x[h*s.W+w]
		}
		for _, rows := range [][2]int{{0, rowsPer}, {0, 1}, {1, rowsPer / 2}, {rowsPer / 2, rowsPer}, {rowsPer - 1, rowsPer}, {2, 2}} {
			k0, k1 := rows[0], rows[1]
			check := func(name string, got func(i int) float64) {
				for ph := range g.nPhase {
					for k := range rowsPer {
						for j := range g.wq {
							v := got(ph*g.phaseLen + k*g.wq + j)
							if k < k0 || k >= k1 {
								if !math.IsNaN(v) {
									t.Fatalf("%s %+v rows [%d, %d): phase %d row %d column %d = %v, outside the rows asked for", name, p, k0, k1, ph, k, j, v)
								}
								continue
							}
							if w := float64(want(ph, k, j)); v != w {
								t.Fatalf("%s %+v rows [%d, %d): phase %d row %d column %d = %v, want %v", name, p, k0, k1, ph, k, j, v, w)
							}
						}
					}
				}
			}
			ph32 := make([]float32, g.phaseLen*g.nPhase)
			for i := range ph32 {
				ph32[i] = float32(math.NaN())
			}
			fillPhaseRows(g, ph32, x, k0, k1)
			check("float32", func(i int) float64 { return float64(ph32[i]) })
			x64 := make([]float64, len(x))
			for i, v := range x {
				x64[i] = float64(v)
			}
			ph64 := make([]float64, len(ph32))
			for i := range ph64 {
				ph64[i] = math.NaN()
			}
			fillPhaseRows(g, ph64, x64, k0, k1)
			check("float64", func(i int) float64 { return ph64[i] })
		}
	}
}

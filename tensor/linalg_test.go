package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// refMatMul is torch.matmul for rank ≥ 2 operands, on row-major values.
func refMatMul(a []float64, as []int, b []float64, bs []int) ([]int, []float64) {
	ra, rb := len(as), len(bs)
	m, k, n := as[ra-2], as[ra-1], bs[rb-1]
	batch, _ := tensor.BroadcastShapes(as[:ra-2], bs[:rb-2])
	outShape := append(append([]int(nil), batch...), m, n)
	out := make([]float64, 0)
	pick := func(shape []int, idx []int) int { // broadcast batch index → flat matrix number
		lead := len(batch) - len(shape)
		p := 0
		for i, d := range shape {
			j := idx[i+lead]
			if d == 1 {
				j = 0
			}
			p = p*d + j
		}
		return p
	}
	forEachIndex(append(append([]int(nil), batch...), m, n), func(idx []int) {
		bi := idx[:len(batch)]
		i, j := idx[len(batch)], idx[len(batch)+1]
		am := pick(as[:ra-2], bi) * m * k
		bm := pick(bs[:rb-2], bi) * k * n
		s := 0.0
		for l := 0; l < k; l++ {
			s += a[am+i*k+l] * b[bm+l*n+j]
		}
		out = append(out, s)
	})
	return outShape, out
}

func randTensor(rng *rand.Rand, dt device.DType, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(rng, -1, 1, shape...).Cast(dt)
}

func TestMatMul(t *testing.T) {
	t.Parallel()
	a := tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	b := tensor.FromFloat32([]float32{7, 8, 9, 10, 11, 12}, 3, 2)
	assertValues(t, tensor.MatMul(a, b), []int{2, 2}, []float64{58, 64, 139, 154}, 0)
	assertValues(t, tensor.MatMul(b, a), []int{3, 3}, []float64{39, 54, 69, 49, 68, 87, 59, 82, 105}, 0)
	// Transposed views: aᵀᵀ, and (bᵀ)ᵀ.
	assertValues(t, tensor.MatMul(a.T().T(), b.T().T()), []int{2, 2}, []float64{58, 64, 139, 154}, 0)
	assertValues(t, tensor.MatMul(b.T(), a.T()), []int{2, 2}, []float64{58, 139, 64, 154}, 0)

	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		as, bs []int
		view   func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor)
	}{
		{"2d", []int{5, 7}, []int{7, 3}, nil},
		{"a-transposed", []int{7, 5}, []int{7, 3}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a.T(), b }},
		{"b-transposed", []int{5, 7}, []int{3, 7}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a, b.T() }},
		{"both-transposed", []int{7, 5}, []int{3, 7}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a.T(), b.T() }},
		{"sliced", []int{6, 9}, []int{8, 4}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
			return a.Slice(0, 1, 5).Slice(1, 2, 9), b.Slice(0, 1, 8)
		}},
		{"batch", []int{3, 4, 5}, []int{3, 5, 2}, nil},
		{"batch-broadcast-b", []int{3, 4, 5}, []int{5, 2}, nil},
		{"batch-broadcast-a", []int{4, 5}, []int{3, 5, 2}, nil},
		{"batch-broadcast-unit", []int{1, 4, 5}, []int{3, 5, 2}, nil},
		{"batch-broadcast-both", []int{2, 1, 4, 5}, []int{3, 5, 2}, nil},
		{"batch-broadcast-4d", []int{2, 1, 4, 5}, []int{1, 3, 5, 2}, nil},
		{"batch-transposed", []int{3, 5, 4}, []int{3, 2, 5}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a.T(), b.T() }},
		{"batch-permuted", []int{4, 3, 5}, []int{3, 5, 2}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a.Permute(1, 0, 2), b }},
		{"weight-transposed", []int{2, 3, 4, 5}, []int{6, 5}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a, b.T() }},
		{"expanded", []int{4, 5}, []int{5, 2}, func(a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return a.Expand(3, 4, 5), b }},
		{"vector-shapes", []int{1, 5}, []int{5, 1}, nil},
		{"k-zero", []int{3, 0}, []int{0, 2}, nil},
		{"large", []int{67, 129}, []int{129, 45}, nil},
	}
	for _, tc := range cases {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			t.Run(tc.name+"/"+dt.String(), func(t *testing.T) {
				x, y := randTensor(rng, dt, tc.as...), randTensor(rng, dt, tc.bs...)
				if tc.view != nil {
					x, y = tc.view(x, y)
				}
				got := tensor.MatMul(x, y)
				shape, want := refMatMul(x.Values(), x.Shape(), y.Values(), y.Shape())
				tol := 1e-5
				if dt == device.Float64 {
					tol = 1e-13
				}
				assert.Equal(t, dt, got.DType())
				assertValues(t, got, shape, want, tol)
			})
		}
	}
	assertPanicsWith(t, func() { tensor.MatMul(arange(2, 3), arange(2, 3)) }, "[2 3]")
	assertPanicsWith(t, func() { tensor.MatMul(arange(2, 3), arange(4, 2)) }, "[2 3]", "[4 2]")
	assertPanicsWith(t, func() { tensor.MatMul(arange(2, 2, 3), arange(3, 3, 2)) }, "[2 2 3]", "[3 3 2]")
	assertPanicsWith(t, func() { tensor.MatMul(arange(3), arange(3, 1)) }, "[3]", "[3 1]")
	assertPanicsWith(t, func() { tensor.MatMul(arange(2, 3), arange64(3, 2)) }, "[2 3]", "[3 2]")
}

// refConv is a direct loop for Conv2D and its gradients on row-major values.
type refConv struct {
	n, c, h, w, oc, kh, kw int
	o                      tensor.ConvOptions
}

func (r refConv) params() (sh, sw, ph, pw, dh, dw, g, oh, ow int) {
	one := func(v int) int {
		if v == 0 {
			return 1
		}
		return v
	}
	sh, sw, dh, dw, g = one(r.o.StrideH), one(r.o.StrideW), one(r.o.DilH), one(r.o.DilW), one(r.o.Groups)
	ph, pw = r.o.PadH, r.o.PadW
	oh = (r.h+2*ph-dh*(r.kh-1)-1)/sh + 1
	ow = (r.w+2*pw-dw*(r.kw-1)-1)/sw + 1
	return
}

// taps calls fn(yi, xi, wi) for every term y[yi] += x[xi]*w[wi].
func (r refConv) taps(fn func(yi, xi, wi int)) {
	sh, sw, ph, pw, dh, dw, g, oh, ow := r.params()
	cg, ocg := r.c/g, r.oc/g
	for n := 0; n < r.n; n++ {
		for oc := 0; oc < r.oc; oc++ {
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					for c := 0; c < cg; c++ {
						for a := 0; a < r.kh; a++ {
							for b := 0; b < r.kw; b++ {
								y, x := i*sh-ph+a*dh, j*sw-pw+b*dw
								if y < 0 || y >= r.h || x < 0 || x >= r.w {
									continue
								}
								ic := oc/ocg*cg + c
								fn(((n*r.oc+oc)*oh+i)*ow+j, ((n*r.c+ic)*r.h+y)*r.w+x, ((oc*cg+c)*r.kh+a)*r.kw+b)
							}
						}
					}
				}
			}
		}
	}
}

func TestConv2D(t *testing.T) {
	t.Parallel()
	// A hand-computed case: 1×1×3×3 input, 2×2 kernel of ones, padding 1, stride 2.
	x := arange(1, 1, 3, 3)
	w := tensor.Full(tensor.CPU(), device.Float32, 1, 1, 1, 2, 2)
	assertValues(t, tensor.Conv2D(x, w, tensor.ConvOptions{PadH: 1, PadW: 1, StrideH: 2, StrideW: 2}),
		[]int{1, 1, 2, 2}, []float64{0, 1 + 2, 3 + 6, 4 + 5 + 7 + 8}, 0)

	rng := rand.New(rand.NewPCG(3, 4))
	cases := []refConv{
		{2, 3, 6, 6, 4, 3, 3, tensor.ConvOptions{}},
		{2, 3, 6, 6, 4, 3, 3, tensor.ConvOptions{PadH: 1, PadW: 1}},
		{2, 2, 7, 8, 3, 3, 3, tensor.ConvOptions{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{1, 2, 9, 9, 2, 3, 3, tensor.ConvOptions{DilH: 2, DilW: 2, PadH: 2, PadW: 1}},
		{2, 4, 5, 6, 6, 3, 1, tensor.ConvOptions{Groups: 2, PadH: 1}},
		{2, 3, 5, 5, 3, 3, 3, tensor.ConvOptions{Groups: 3, PadH: 1, PadW: 1}},
		{2, 3, 7, 6, 5, 2, 3, tensor.ConvOptions{StrideH: 1, StrideW: 2, PadW: 1, DilH: 2}},
		// Same-size convolutions of images smaller than the kernel.
		{1, 4, 2, 2, 4, 5, 5, tensor.ConvOptions{Groups: 4, PadH: 2, PadW: 2}},
		{2, 2, 1, 3, 3, 3, 7, tensor.ConvOptions{PadH: 1, PadW: 3}},
		{1, 1, 3, 1, 2, 7, 3, tensor.ConvOptions{PadH: 3, PadW: 1}},
	}
	for ci, r := range cases {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			t.Run(fmt.Sprintf("case%d/%v", ci, dt), func(t *testing.T) {
				tol := 1e-5
				if dt == device.Float64 {
					tol = 1e-13
				}
				// A non-contiguous input: stored as N×H×W×C and permuted.
				x := randTensor(rng, dt, r.n, r.h, r.w, r.c).Permute(0, 3, 1, 2)
				w := randTensor(rng, dt, r.oc, r.c/max(r.o.Groups, 1), r.kh, r.kw)
				_, _, _, _, _, _, _, oh, ow := r.params()
				dy := randTensor(rng, dt, r.n, r.oc, oh, ow)
				xv, wv, dyv := x.Values(), w.Values(), dy.Values()
				y := make([]float64, r.n*r.oc*oh*ow)
				dx := make([]float64, len(xv))
				dw := make([]float64, len(wv))
				r.taps(func(yi, xi, wi int) {
					y[yi] += xv[xi] * wv[wi]
					dx[xi] += dyv[yi] * wv[wi]
					dw[wi] += dyv[yi] * xv[xi]
				})
				assertValues(t, tensor.Conv2D(x, w, r.o), []int{r.n, r.oc, oh, ow}, y, tol)
				assertValues(t, tensor.Conv2DGradInput(dy, w, x.Shape(), r.o), x.Shape(), dx, tol)
				assertValues(t, tensor.Conv2DGradWeight(dy, x, w.Shape(), r.o), w.Shape(), dw, tol)
			})
		}
	}

	x = arange(2, 3, 5, 5)
	assertPanicsWith(t, func() { tensor.Conv2D(x, arange(4, 2, 3, 3), tensor.ConvOptions{}) }, "[2 3 5 5]", "[4 2 3 3]")
	assertPanicsWith(t, func() { tensor.Conv2D(x, arange(4, 1, 3, 3), tensor.ConvOptions{Groups: 2}) }, "[2 3 5 5]", "[4 1 3 3]")
	assertPanicsWith(t, func() { tensor.Conv2D(x, arange(4, 3, 7, 7), tensor.ConvOptions{}) }, "[2 3 5 5]")
	// The kernel overhangs by less than a stride (OutH's division would give 1).
	assertPanicsWith(t, func() { tensor.Conv2D(x, arange(4, 3, 7, 7), tensor.ConvOptions{StrideH: 3, StrideW: 3}) }, "[2 3 5 5]")
	assertPanicsWith(t, func() { tensor.Conv2D(x, arange(4, 3, 3, 3), tensor.ConvOptions{DilH: 3}) }, "[2 3 5 5]")
	assertValues(t, tensor.Conv2D(x, tensor.Full(tensor.CPU(), device.Float32, 1, 1, 3, 5, 5), tensor.ConvOptions{}),
		[]int{2, 1, 1, 1}, []float64{74 * 75 / 2, (149*150 - 74*75) / 2}, 0)
	assertPanicsWith(t, func() { tensor.Conv2D(arange(3, 5, 5), arange(4, 3, 3, 3), tensor.ConvOptions{}) }, "[3 5 5]", "[4 3 3 3]")
	assertPanicsWith(t, func() { tensor.Conv2D(x, arange64(4, 3, 3, 3), tensor.ConvOptions{}) }, "[2 3 5 5]", "[4 3 3 3]")
	w = arange(4, 3, 3, 3)
	assertPanicsWith(t, func() { tensor.Conv2DGradInput(arange(2, 4, 2, 2), w, []int{2, 3, 5, 5}, tensor.ConvOptions{}) }, "[2 4 2 2]", "[2 4 3 3]")
	assertPanicsWith(t, func() { tensor.Conv2DGradWeight(arange(2, 5, 3, 3), x, []int{4, 3, 3, 3}, tensor.ConvOptions{}) }, "[2 5 3 3]", "[2 4 3 3]")
}

func TestPooling(t *testing.T) {
	t.Parallel()
	x := tensor.FromFloat32([]float32{
		1, 5, 2, 0,
		3, 4, 8, 7,
		-1, 9, 6, 6,
		2, 0, 3, 5,
	}, 1, 1, 4, 4)
	o := tensor.PoolOptions{KH: 2, KW: 2}
	y, arg := tensor.MaxPool2D(x, o)
	assertValues(t, y, []int{1, 1, 2, 2}, []float64{5, 8, 9, 6}, 0)
	assert.Equal(t, []int64{1, 6, 9, 10}, arg.Int64s())
	dy := tensor.FromFloat32([]float32{1, 2, 3, 4}, 1, 1, 2, 2)
	assertValues(t, tensor.MaxPool2DGrad(dy, arg, x.Shape(), o), []int{1, 1, 4, 4}, []float64{
		0, 1, 0, 0,
		0, 0, 2, 0,
		0, 3, 4, 0,
		0, 0, 0, 0,
	}, 0)
	// Overlapping windows accumulate.
	o3 := tensor.PoolOptions{KH: 3, KW: 3, StrideH: 1, StrideW: 1}
	y3, arg3 := tensor.MaxPool2D(x, o3)
	assertValues(t, y3, []int{1, 1, 2, 2}, []float64{9, 9, 9, 9}, 0)
	assertValues(t, tensor.MaxPool2DGrad(tensor.FromFloat32([]float32{1, 2, 3, 4}, 1, 1, 2, 2), arg3, x.Shape(), o3),
		[]int{1, 1, 4, 4}, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0}, 0)
	// Padding never wins, even over negative values.
	neg := x.AddScalar(-100)
	yp, _ := tensor.MaxPool2D(neg, tensor.PoolOptions{KH: 2, KW: 2, PadH: 1, PadW: 1})
	assertValues(t, yp, []int{1, 1, 3, 3}, []float64{-99, -95, -100, -97, -91, -93, -98, -97, -95}, 0)

	avg := tensor.AvgPool2D(x, o)
	assertValues(t, avg, []int{1, 1, 2, 2}, []float64{13. / 4, 17. / 4, 10. / 4, 20. / 4}, 1e-7)
	assertValues(t, tensor.AvgPool2DGrad(dy, x.Shape(), o), []int{1, 1, 4, 4}, []float64{
		.25, .25, .5, .5,
		.25, .25, .5, .5,
		.75, .75, 1, 1,
		.75, .75, 1, 1,
	}, 1e-7)
	// Padding: the corner window of a 3×3 kernel with padding 1 covers 4 real elements.
	op := tensor.PoolOptions{KH: 3, KW: 3, StrideH: 3, StrideW: 3, PadH: 1, PadW: 1}
	assertValues(t, tensor.AvgPool2D(x, op), []int{1, 1, 2, 2}, []float64{13. / 4, 17. / 4, 10. / 4, 20. / 4}, 1e-7)
	op.CountPad = true
	assertValues(t, tensor.AvgPool2D(x, op), []int{1, 1, 2, 2}, []float64{13. / 9, 17. / 9, 10. / 9, 20. / 9}, 1e-7)
	g := tensor.AvgPool2DGrad(tensor.FromFloat32([]float32{9, 9, 9, 9}, 1, 1, 2, 2), x.Shape(), op)
	assertValues(t, g, []int{1, 1, 4, 4}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1e-6)

	// Non-contiguous input and several planes.
	rng := rand.New(rand.NewPCG(5, 6))
	xs := randTensor(rng, device.Float64, 2, 6, 7, 3).Permute(0, 3, 1, 2)
	ys, _ := tensor.MaxPool2D(xs, tensor.PoolOptions{KH: 2, KW: 3, StrideH: 2, StrideW: 2})
	assert.Equal(t, []int{2, 3, 3, 3}, ys.Shape())
	want := make([]float64, 0)
	xv := xs.Values()
	forEachIndex([]int{2, 3, 3, 3}, func(i []int) {
		m := math.Inf(-1)
		for a := 0; a < 2; a++ {
			for b := 0; b < 3; b++ {
				m = math.Max(m, xv[flat([]int{2, 3, 6, 7}, []int{i[0], i[1], 2*i[2] + a, 2*i[3] + b})])
			}
		}
		want = append(want, m)
	})
	assertValues(t, ys, []int{2, 3, 3, 3}, want, 0)

	assertPanicsWith(t, func() { tensor.MaxPool2D(arange(4, 4), o) }, "[4 4]")
	assertPanicsWith(t, func() { tensor.AvgPool2D(x, tensor.PoolOptions{KH: 5, KW: 5}) }, "[1 1 4 4]")
	assertPanicsWith(t, func() { tensor.MaxPool2D(x, tensor.PoolOptions{KH: 5, KW: 2, StrideH: 2}) }, "[1 1 4 4]")
	assertValues(t, tensor.AvgPool2D(x, tensor.PoolOptions{KH: 4, KW: 4}), []int{1, 1, 1, 1}, []float64{60. / 16}, 1e-7)
	assertValues(t, tensor.AvgPool2D(x, tensor.PoolOptions{KH: 5, KW: 5, PadH: 2, PadW: 2, StrideH: 9, StrideW: 9}), []int{1, 1, 1, 1}, []float64{(1 + 5 + 2 + 3 + 4 + 8 - 1 + 9 + 6) / 9.}, 1e-7)
	assertPanicsWith(t, func() { tensor.AvgPool2D(x, tensor.PoolOptions{KH: 2, KW: 2, PadH: 2}) }, "[1 1 4 4]")
	assertPanicsWith(t, func() { tensor.MaxPool2DGrad(arange(1, 1, 3, 3), arg, x.Shape(), o) }, "[1 1 3 3]", "[1 1 2 2]")
	assertPanicsWith(t, func() { tensor.AvgPool2DGrad(arange(1, 2, 2, 2), x.Shape(), o) }, "[1 2 2 2]", "[1 1 2 2]")
}

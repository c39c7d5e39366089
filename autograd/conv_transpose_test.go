package autograd_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// convTransposeRef is the defining loop of a transposed convolution: every
// input element scatters x·w into the output window it maps to.
func convTransposeRef(x, w, b []float64, xs, ws []int, o tensor.ConvOptions, outH, outW int) []float64 {
	n, inC, h, wd := xs[0], xs[1], xs[2], xs[3]
	groups := max(o.Groups, 1)
	ocg, kh, kw := ws[1], ws[2], ws[3]
	icg := inC / groups
	outC := ocg * groups
	sh, sw := max(o.StrideH, 1), max(o.StrideW, 1)
	dh, dw := max(o.DilH, 1), max(o.DilW, 1)
	y := make([]float64, n*outC*outH*outW)
	for in := range n {
		for g := range groups {
			for ic := range icg {
				c := g*icg + ic
				for i := range h {
					for j := range wd {
						xv := x[((in*inC+c)*h+i)*wd+j]
						for oc := range ocg {
							for a := range kh {
								for bb := range kw {
									oy := i*sh - o.PadH + a*dh
									ox := j*sw - o.PadW + bb*dw
									if oy < 0 || oy >= outH || ox < 0 || ox >= outW {
										continue
									}
									y[((in*outC+g*ocg+oc)*outH+oy)*outW+ox] += xv * w[((c*ocg+oc)*kh+a)*kw+bb]
								}
							}
						}
					}
				}
			}
		}
	}
	if b != nil {
		for i := range y {
			y[i] += b[(i/(outH*outW))%outC]
		}
	}
	return y
}

func TestConvTranspose2D(t *testing.T) {
	t.Parallel()
	cases := []struct {
		xs, ws     []int
		o          tensor.ConvOptions
		outH, outW int
		bias       bool
	}{
		{[]int{1, 1, 3, 3}, []int{1, 2, 3, 3}, tensor.ConvOptions{}, 5, 5, false},
		{[]int{2, 3, 3, 4}, []int{3, 2, 3, 2}, tensor.ConvOptions{StrideH: 2, StrideW: 3}, 7, 11, true},
		{[]int{2, 4, 3, 3}, []int{4, 1, 3, 3}, tensor.ConvOptions{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 2}, 6, 5, true},
		{[]int{1, 2, 3, 3}, []int{2, 2, 2, 2}, tensor.ConvOptions{DilH: 2, DilW: 2}, 5, 5, true},
		{[]int{1, 2, 4, 3}, []int{2, 3, 3, 3}, tensor.ConvOptions{StrideH: 3, StrideW: 2, PadH: 1, PadW: 2, DilH: 2}, 12, 4, false},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			x, w := randn(rng, c.xs...), randn(rng, c.ws...)
			var b *tensor.Tensor
			var bv *autograd.Var
			var bvals []float64
			outC := c.ws[1] * max(c.o.Groups, 1)
			if c.bias {
				b = randn(rng, outC)
				bv, bvals = autograd.Constant(b), b.Values()
			}
			y := autograd.ConvTranspose2D(autograd.Constant(x), autograd.Constant(w), bv, c.o, c.outH, c.outW)
			require.Equal(t, []int{c.xs[0], outC, c.outH, c.outW}, y.Shape())
			want := convTransposeRef(x.Values(), w.Values(), bvals, c.xs, c.ws, c.o, c.outH, c.outW)
			assert.InDeltaSlice(t, want, y.Value.Values(), 1e-9)

			in := []*tensor.Tensor{x, w}
			if c.bias {
				in = append(in, b)
			}
			err := autograd.GradCheck(func(v []*autograd.Var) *autograd.Var {
				var bb *autograd.Var
				if len(v) == 3 {
					bb = v[2]
				}
				return autograd.ConvTranspose2D(v[0], v[1], bb, c.o, c.outH, c.outW)
			}, in, autograd.GradCheckOptions{})
			assert.NoError(t, err)
		})
	}
}

func TestConvTranspose2DBadShapes(t *testing.T) {
	t.Parallel()
	x := tensor.Zeros(1, 2, 3, 3)
	w := tensor.Zeros(3, 1, 3, 3)
	assert.Panics(t, func() {
		autograd.ConvTranspose2D(autograd.Constant(x), autograd.Constant(w), nil, tensor.ConvOptions{}, 5, 5)
	})
	assert.Panics(t, func() {
		autograd.ConvTranspose2D(autograd.Constant(tensor.Zeros(2, 3)), autograd.Constant(w), nil, tensor.ConvOptions{}, 5, 5)
	})
}

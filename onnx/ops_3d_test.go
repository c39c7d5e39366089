package onnx

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The 3-D operators against a direct loop, and their gradients.

func Test3DConvMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	x := tensor.RandNormal(rng, 0, 1, 2, 4, 5, 4, 6).Cast(device.Float64) // float64
	w := tensor.RandNormal(rng, 0, 1, 6, 2, 3, 2, 3).Cast(device.Float64)
	b := tensor.RandNormal(rng, 0, 1, 6).Cast(device.Float64)
	attrs := []*onnxpb.AttributeProto{attrInt("group", 2), attrInts("strides", 2, 1, 2),
		attrInts("dilations", 1, 2, 1), attrInts("pads", 1, 0, 2, 2, 1, 0)}
	outs, err := callOp("Conv", 17, 1, attrs, autograd.Constant(x), autograd.Constant(w), autograd.Constant(b))
	require.NoError(t, err)

	// The definition, element by element.
	xs, ws := x.Shape(), w.Shape()
	pb, pe := []int{1, 0, 2}, []int{2, 1, 0}
	st, dl := []int{2, 1, 2}, []int{1, 2, 1}
	var od [3]int
	for i := range 3 {
		od[i] = (xs[2+i]+pb[i]+pe[i]-((ws[2+i]-1)*dl[i]+1))/st[i] + 1
	}
	xv, wv, bv := x.Values(), w.Values(), b.Values()
	at := func(n, c, d, h, wi int) float64 {
		if d < 0 || h < 0 || wi < 0 || d >= xs[2] || h >= xs[3] || wi >= xs[4] {
			return 0
		}
		return xv[(((n*xs[1]+c)*xs[2]+d)*xs[3]+h)*xs[4]+wi]
	}
	var want []float64
	cg := ws[1]
	for n := range xs[0] {
		for m := range ws[0] {
			g := m / (ws[0] / 2)
			for d := range od[0] {
				for h := range od[1] {
					for wo := range od[2] {
						s := bv[m]
						for c := range cg {
							for kd := range ws[2] {
								for kh := range ws[3] {
									for kw := range ws[4] {
										s += wv[(((m*cg+c)*ws[2]+kd)*ws[3]+kh)*ws[4]+kw] *
											at(n, g*cg+c, d*st[0]+kd*dl[0]-pb[0], h*st[1]+kh*dl[1]-pb[1], wo*st[2]+kw*dl[2]-pb[2])
									}
								}
							}
						}
						want = append(want, s)
					}
				}
			}
		}
	}
	assert.Equal(t, []int{xs[0], ws[0], od[0], od[1], od[2]}, outs[0].Shape())
	assert.InDeltaSlice(t, want, outs[0].Value.Values(), 1e-12)
}

func Test3DGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	x := tensor.RandNormal(rng, 0, 1, 1, 2, 4, 3, 4).Cast(device.Float64)
	w := tensor.RandNormal(rng, 0, 1, 3, 2, 2, 2, 2).Cast(device.Float64)
	cases := map[string]func(xs []*autograd.Var) *autograd.Var{
		"Conv": func(xs []*autograd.Var) *autograd.Var {
			outs, err := callOp("Conv", 17, 1, []*onnxpb.AttributeProto{attrInts("pads", 1, 0, 1, 0, 1, 0)}, xs[0], xs[1])
			require.NoError(t, err)
			return outs[0]
		},
		"MaxPool": func(xs []*autograd.Var) *autograd.Var {
			outs, err := callOp("MaxPool", 12, 1, []*onnxpb.AttributeProto{attrInts("kernel_shape", 2, 2, 2), attrInts("pads", 1, 0, 1, 0, 1, 0)}, xs[0])
			require.NoError(t, err)
			return outs[0]
		},
		"AveragePool": func(xs []*autograd.Var) *autograd.Var {
			outs, err := callOp("AveragePool", 11, 1, []*onnxpb.AttributeProto{attrInts("kernel_shape", 3, 2, 2), attrInts("strides", 2, 1, 1), attrInts("pads", 1, 1, 0, 1, 0, 1)}, xs[0])
			require.NoError(t, err)
			return outs[0]
		},
	}
	for name, f := range cases {
		inputs := []*tensor.Tensor{x}
		if name == "Conv" {
			inputs = append(inputs, w)
		}
		assert.NoError(t, autograd.GradCheck(f, inputs, autograd.GradCheckOptions{}), name)
	}
	_, err := callOp("MaxPool", 12, 1, []*onnxpb.AttributeProto{attrInts("kernel_shape", 2, 2, 2), attrInt("ceil_mode", 1)}, autograd.Constant(x))
	assert.ErrorIs(t, err, ErrUnsupported)
	_, err = callOp("MaxPool", 12, 1, []*onnxpb.AttributeProto{attrInts("kernel_shape", 9, 2, 2)}, autograd.Constant(x))
	assert.ErrorContains(t, err, "does not fit input X")
}

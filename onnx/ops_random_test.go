package onnx

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

func TestWindows(t *testing.T) {
	size := autograd.Constant(tensor.FromInt64([]int64{10}).Reshape())
	for op, f := range map[string]func(n, N float64) float64{
		"HannWindow":    func(n, N float64) float64 { return 0.5 - 0.5*math.Cos(2*math.Pi*n/N) },
		"HammingWindow": func(n, N float64) float64 { return 25.0/46 - 21.0/46*math.Cos(2*math.Pi*n/N) },
		"BlackmanWindow": func(n, N float64) float64 {
			return 0.42 - 0.5*math.Cos(2*math.Pi*n/N) + 0.08*math.Cos(4*math.Pi*n/N)
		},
	} {
		for _, periodic := range []int64{1, 0} {
			outs, err := callOp(op, 17, 1, []*onnxpb.AttributeProto{attrInt("periodic", periodic), attrInt("output_datatype", int64(onnxpb.TensorProto_DOUBLE))}, size)
			require.NoError(t, err, op)
			N := 10.0 - float64(1-periodic)
			for i, v := range outs[0].Value.Float64s() {
				assert.InDelta(t, f(float64(i), N), v, 1e-15, "%s periodic=%d [%d]", op, periodic, i)
			}
		}
	}
	outs, err := callOp("HannWindow", 17, 1, []*onnxpb.AttributeProto{attrInt("periodic", 0)}, autograd.Constant(tensor.FromInt64([]int64{1}).Reshape()))
	require.NoError(t, err)
	assert.Equal(t, []float32{1}, outs[0].Value.Float32s(), "a symmetric window of one value")
}

func TestRandomOps(t *testing.T) {
	shape := attrInts("shape", 200, 50)
	outs, err := callOp("RandomUniform", 1, 1, []*onnxpb.AttributeProto{shape, attrFloat("low", 2), attrFloat("high", 3)})
	require.NoError(t, err)
	u := outs[0].Value
	assert.Equal(t, []int{200, 50}, u.Shape())
	assert.Equal(t, device.Float32, u.DType())
	mean := 0.0
	for _, v := range u.Values() {
		require.True(t, v >= 2 && v < 3, "%v outside [2, 3)", v)
		mean += v / float64(u.Len())
	}
	assert.InDelta(t, 2.5, mean, 0.02)

	like := autograd.Constant(tensor.Zeros(300, 40).Cast(device.Float64))
	seeded := []*onnxpb.AttributeProto{attrFloat("mean", 1), attrFloat("scale", 2), attrFloat("seed", 7)}
	a, err := callOp("RandomNormalLike", 1, 1, seeded, like)
	require.NoError(t, err)
	b, err := callOp("RandomNormalLike", 1, 1, seeded, like)
	require.NoError(t, err)
	assert.Equal(t, device.Float64, a[0].Value.DType(), "the input's type")
	assert.Equal(t, a[0].Value.Float64s(), b[0].Value.Float64s(), "a seed gives the same values every run")
	var m, v float64
	vals := a[0].Value.Values()
	for _, x := range vals {
		m += x / float64(len(vals))
	}
	for _, x := range vals {
		v += (x - m) * (x - m) / float64(len(vals))
	}
	assert.InDelta(t, 1, m, 0.1)
	assert.InDelta(t, 2, math.Sqrt(v), 0.1)

	p := make([]float32, 4000)
	for i := range p {
		p[i] = []float32{0, 1, 0.25, 0.75}[i%4]
	}
	outs, err = callOp("Bernoulli", 15, 1, nil, autograd.Constant(tensor.FromFloat32(p, 4000)))
	require.NoError(t, err)
	var ones [4]float64
	for i, x := range outs[0].Value.Values() {
		require.True(t, x == 0 || x == 1)
		ones[i%4] += x / 1000
	}
	assert.Equal(t, 0.0, ones[0])
	assert.InDelta(t, 1.0, ones[1], 1e-12)
	assert.InDelta(t, 0.25, ones[2], 0.05)
	assert.InDelta(t, 0.75, ones[3], 0.05)
	_, err = callOp("Bernoulli", 15, 1, nil, autograd.Constant(tensor.FromFloat32([]float32{1.5}, 1)))
	assert.ErrorContains(t, err, "not a probability")

	logits := tensor.FromFloat32([]float32{0, 0, 30, 30, 0, 0}, 2, 3)
	outs, err = callOp("Multinomial", 7, 1, []*onnxpb.AttributeProto{attrInt("sample_size", 5)}, autograd.Constant(logits))
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 2, 2, 2, 2, 0, 0, 0, 0, 0}, outs[0].Value.Int64s(), "a dominant class is drawn every time")

	_, err = callOp("RandomUniform", 1, 1, nil)
	assert.ErrorContains(t, err, "attribute shape is required")
	_, err = callOp("RandomNormal", 1, 1, []*onnxpb.AttributeProto{attrInts("shape", 1<<20, 1<<20)})
	assert.ErrorContains(t, err, "more than")
}

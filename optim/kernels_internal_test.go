package optim

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// TestStepKernelsRejectMismatches checks that the kernel steps decline,
// changing nothing, the tensors the kernels cannot take, and run on the
// CPU's kernels otherwise.
func TestStepKernelsRejectMismatches(t *testing.T) {
	t.Parallel()
	p := tensor.Zeros(3)
	sgd, adam := device.SGDHyper{LR: 0.1}, device.AdamHyper{LR: 0.1, Step: 1}
	assert.False(t, sgdStep(sgd, p, tensor.Zeros(4), nil), "shapes differ")
	assert.False(t, sgdStep(sgd, p, nil, nil), "no gradient")
	assert.False(t, sgdStep(device.SGDHyper{LR: 0.1, Momentum: 0.9}, p, tensor.Zeros(3), nil), "momentum without a buffer")
	assert.False(t, sgdStep(sgd, tensor.Zeros(2, 2), tensor.Zeros(2, 2).T(), nil), "a strided gradient")
	assert.False(t, sgdStep(sgd, p.Cast(device.Float64), tensor.Zeros(3), nil), "types differ")
	assert.False(t, sgdStep(sgd, tensor.FromInt64([]int64{0, 0, 0}, 3), tensor.FromInt64([]int64{1, 1, 1}, 3), nil), "integer parameter")
	amsgrad := adam
	amsgrad.AMSGrad = true
	assert.False(t, adamStep(amsgrad, p, tensor.Zeros(3), tensor.Zeros(3), tensor.Zeros(3), nil), "AMSGrad without its buffer")
	assert.False(t, adamStep(adam, p, tensor.Zeros(3), tensor.Zeros(3).Cast(device.Float64), tensor.Zeros(3), nil), "moment types differ")
	assert.Equal(t, []float32{0, 0, 0}, p.Float32s(), "nothing changed")

	assert.True(t, sgdStep(sgd, p, tensor.Full(tensor.CPU(), device.Float32, 1, 3), nil))
	assert.Equal(t, []float32{-0.1, -0.1, -0.1}, p.Float32s())

	// The CPU has no multi-tensor kernels: groups go parameter by parameter.
	ps, gs := []*tensor.Tensor{tensor.Zeros(2), tensor.Zeros(3)}, []*tensor.Tensor{tensor.Zeros(2), tensor.Zeros(3)}
	assert.False(t, sgdSteps(sgd, ps, gs, []*tensor.Tensor{nil, nil}))
	assert.False(t, adamSteps(adam, ps, gs, gs, gs))
}

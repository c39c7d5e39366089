package autograd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/tensor"
)

// undescribedDouble records 2x without describing the operation, as an
// operation defined in another file might.
func undescribedDouble(x *Var) *Var {
	return record(x.Value.MulScalar(2), func(g *tensor.Tensor, _ []bool) []*tensor.Tensor {
		return []*tensor.Tensor{g.MulScalar(2)}
	}, x)
}

// TestOpInfoRecorder checks that an operation recorded without a
// description is named by the function that recorded it.
func TestOpInfoRecorder(t *testing.T) {
	t.Parallel()
	x := Leaf(tensor.FromFloat32([]float32{1, 2}, 2))
	op := undescribedDouble(x).Op()
	require.NotNil(t, op)
	assert.Empty(t, op.Name)
	assert.Equal(t, "autograd.undescribedDouble", op.Recorder)
	assert.Equal(t, []*Var{x}, op.Inputs)
	assert.Empty(t, Relu(x).Op().Recorder, "described operations need no recorder")

	assert.True(t, isClosureSuffix("func12"))
	assert.True(t, isClosureSuffix("3"))
	assert.False(t, isClosureSuffix("func"))
	assert.False(t, isClosureSuffix("Erf"))
	assert.Equal(t, "", funcName(nil))
}

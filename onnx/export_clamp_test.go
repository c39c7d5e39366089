package onnx_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// exportClampModel clamps its input three ways: both bounds, a lower
// bound only (upper +∞) and an upper bound only (lower -∞), scaled by a
// parameter so that the operations are recorded.
type exportClampModel struct{ w *autograd.Param }

func (m exportClampModel) Parameters() []*autograd.Param { return []*autograd.Param{m.w} }
func (m exportClampModel) Forward(x *autograd.Var) *autograd.Var {
	y := autograd.Mul(x, m.w.Var)
	a := autograd.Clamp(y, -1, 2)
	b := autograd.Clamp(y, 0, math.Inf(1))
	c := autograd.Clamp(y, math.Inf(-1), 0.5)
	return autograd.Add(autograd.Add(a, b), c)
}

// TestExportClamp exports autograd.Clamp (an imported Clip that is not
// fused into a Conv, such as MobileNet's ReLU6 after a BatchNorm) as Clip
// with the finite bounds only, and runs the file in Hora.
func TestExportClamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := exportClampModel{w: autograd.NewParam("w", tensor.RandNormal(rng, 0, 2, 1, 6))}
	x := tensor.RandNormal(rng, 0, 2, 4, 6)
	imported, err := onnx.Import(bytes.NewReader(exportBytes(t, m, x)))
	require.NoError(t, err)
	assert.Equal(t, []string{"Mul", "Clip", "Add"}, imported.OpTypes())
	x2 := tensor.RandNormal(rng, 0, 2, 3, 6)
	outs, err := imported.Run(autograd.Constant(x2))
	require.NoError(t, err)
	assert.Equal(t, horaForward(m, x2).Float32s(), outs[0].Value.Float32s())
}

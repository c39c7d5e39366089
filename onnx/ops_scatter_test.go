package onnx

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

func scF64(vals []float64, shape ...int) *autograd.Var {
	return autograd.Constant(tensor.FromFloat64(vals, shape...))
}

func scInts(vals []int64, shape ...int) *autograd.Var {
	if len(shape) == 0 {
		shape = []int{len(vals)}
	}
	return autograd.Constant(tensor.FromInt64(vals, shape...))
}

// scValues returns v's elements as float64.
func scValues(v *autograd.Var) []float64 { return v.Value.Values() }

func TestScatterGrad(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := func(shape ...int) *tensor.Tensor {
		return tensor.RandUniform(rng, 0.5, 2, shape...).Cast(device.Float64)
	}
	cases := []struct {
		name   string
		op     string
		opset  int
		attrs  []any
		inputs []*tensor.Tensor
		// build maps the checked inputs onto the op's inputs.
		build func(xs []*autograd.Var) []*autograd.Var
	}{
		{"ScatterElementsNone", "ScatterElements", 16, []any{"axis", 1}, []*tensor.Tensor{rnd(2, 4), rnd(2, 3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{1, 1, -1, 0, 2, 0}, 2, 3), xs[1]}
			}},
		{"ScatterElementsAdd", "ScatterElements", 16, []any{"axis", 0, "reduction", "add"}, []*tensor.Tensor{rnd(3, 2), rnd(3, 2)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{0, 1, 0, 1, 0, 2}, 3, 2), xs[1]}
			}},
		{"ScatterElementsMul", "ScatterElements", 16, []any{"reduction", "mul"}, []*tensor.Tensor{rnd(4), rnd(3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{1, 1, 3}), xs[1]}
			}},
		{"ScatterElementsMax", "ScatterElements", 18, []any{"reduction", "max"},
			[]*tensor.Tensor{tensor.FromFloat64([]float64{1, 5, 2, 7}, 4), tensor.FromFloat64([]float64{3, 4, 6}, 3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{0, 0, 3}), xs[1]}
			}},
		{"ScatterND", "ScatterND", 11, nil, []*tensor.Tensor{rnd(3, 2, 2), rnd(2, 2, 2)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{2, 0}, 2, 1), xs[1]}
			}},
		{"ScatterNDAdd", "ScatterND", 16, []any{"reduction", "add"}, []*tensor.Tensor{rnd(3, 2), rnd(3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{0, 1, 0, 1, 2, 0}, 3, 2), xs[1]}
			}},
		{"ScatterNDMul", "ScatterND", 16, []any{"reduction", "mul"}, []*tensor.Tensor{rnd(3, 2), rnd(3, 2)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{1, -2, 1}, 3, 1), xs[1]}
			}},
		{"GatherNDBatch", "GatherND", 12, []any{"batch_dims", 1}, []*tensor.Tensor{rnd(2, 3, 2)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{1, 1, 0, 2}, 2, 2, 1)}
			}},
		{"GatherND", "GatherND", 11, nil, []*tensor.Tensor{rnd(2, 3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{1, 2, 0, -1, 1, 2}, 3, 2)}
			}},
		{"Compress", "Compress", 11, []any{"axis", 1}, []*tensor.Tensor{rnd(2, 3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{1, 0, 1})}
			}},
		{"CompressFlat", "Compress", 9, nil, []*tensor.Tensor{rnd(2, 3)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{0, 1, 0, 1})}
			}},
		{"ReverseSequence", "ReverseSequence", 10, []any{"batch_axis", 0, "time_axis", 1}, []*tensor.Tensor{rnd(2, 3, 2)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{3, 2})}
			}},
		{"MaxUnpool", "MaxUnpool", 11, []any{"kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}}, []*tensor.Tensor{rnd(1, 1, 2, 2)},
			func(xs []*autograd.Var) []*autograd.Var {
				return []*autograd.Var{xs[0], scInts([]int64{5, 7, 13, 15}, 1, 1, 2, 2), scInts([]int64{1, 1, 5, 4})}
			}},
		{"Unique", "Unique", 11, []any{"axis", 0}, []*tensor.Tensor{tensor.FromFloat64([]float64{1, 2, 0, 1, 0.5, 2}, 3, 2)},
			func(xs []*autograd.Var) []*autograd.Var { return []*autograd.Var{xs[0]} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := func(xs []*autograd.Var) *autograd.Var {
				out, err := callOpT(t, tc.op, tc.opset, 1, tc.attrs, tc.build(xs)...)
				require.NoError(t, err)
				return out[0]
			}
			require.NoError(t, autograd.GradCheck(f, tc.inputs, autograd.GradCheckOptions{}))
		})
	}
}

func TestScatterForward(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		op    string
		opset int
		attrs []any
		in    []*autograd.Var
		outs  int
		shape [][]int
		want  [][]float64
	}{
		{"ScatterElementsLastWins", "ScatterElements", 13, nil,
			[]*autograd.Var{scF64([]float64{0, 0, 0}, 3), scInts([]int64{1, 1}), scF64([]float64{4, 5}, 2)}, 1,
			[][]int{{3}}, [][]float64{{0, 5, 0}}},
		{"ScatterElementsIntMul", "ScatterElements", 16, []any{"reduction", "mul"},
			[]*autograd.Var{scInts([]int64{2, 3, 4}), scInts([]int64{1, 1, 2}), scInts([]int64{5, 7, 1})}, 1,
			[][]int{{3}}, [][]float64{{2, 105, 4}}},
		{"ScatterElementsIntMin", "ScatterElements", 18, []any{"reduction", "min"},
			[]*autograd.Var{scInts([]int64{2, 3, 4}), scInts([]int64{0, 2}), scInts([]int64{5, -1})}, 1,
			[][]int{{3}}, [][]float64{{2, 3, -1}}},
		{"ScatterNDIntAdd", "ScatterND", 16, []any{"reduction", "add"},
			[]*autograd.Var{scInts([]int64{1, 2, 3, 4}, 2, 2), scInts([]int64{1, 1}, 2, 1), scInts([]int64{1, 1, 2, 2}, 2, 2)}, 1,
			[][]int{{2, 2}}, [][]float64{{1, 2, 6, 7}}},
		{"ScatterNDIntNone", "ScatterND", 11, nil,
			[]*autograd.Var{scInts([]int64{1, 2, 3, 4}, 2, 2), scInts([]int64{1, 1}, 2, 1), scInts([]int64{5, 6, 7, 8}, 2, 2)}, 1,
			[][]int{{2, 2}}, [][]float64{{1, 2, 7, 8}}},
		{"GatherNDWholeRows", "GatherND", 12, []any{"batch_dims", 1},
			[]*autograd.Var{scF64([]float64{1, 2, 3, 4}, 2, 2), scInts(nil, 2, 0)}, 1,
			[][]int{{2, 2}}, [][]float64{{1, 2, 3, 4}}},
		{"NonZeroScalar", "NonZero", 13, nil, []*autograd.Var{autograd.Constant(tensor.FromInt64([]int64{3}))}, 1,
			[][]int{{1, 1}}, [][]float64{{0}}},
		{"NonZeroNone", "NonZero", 13, nil, []*autograd.Var{scF64([]float64{0, 0}, 1, 2)}, 1,
			[][]int{{2, 0}}, [][]float64{{}}},
		{"CompressShortCondition", "Compress", 11, []any{"axis", 0},
			[]*autograd.Var{scF64([]float64{1, 2, 3}, 3), scInts([]int64{0, 1})}, 1,
			[][]int{{1}}, [][]float64{{2}}},
		{"UniqueIntUnsorted", "Unique", 11, []any{"sorted", 0},
			[]*autograd.Var{scInts([]int64{3, 1, 3, 2, 1})}, 4,
			[][]int{{3}, {3}, {5}, {3}},
			[][]float64{{3, 1, 2}, {0, 1, 3}, {0, 1, 0, 2, 1}, {2, 2, 1}}},
		{"BitShiftBroadcast", "BitShift", 11, []any{"direction", "RIGHT"},
			[]*autograd.Var{scInts([]int64{16, 255}, 2, 1), scInts([]int64{1, 4})}, 1,
			[][]int{{2, 2}}, [][]float64{{8, 1, 127, 15}}},
		{"BitShiftScalar", "BitShift", 11, []any{"direction", "LEFT"},
			[]*autograd.Var{autograd.Constant(tensor.FromInt64([]int64{3})), autograd.Constant(tensor.FromInt64([]int64{2}))}, 1,
			[][]int{{}}, [][]float64{{12}}},
		{"ReverseSequenceTime", "ReverseSequence", 10, nil,
			[]*autograd.Var{scF64([]float64{1, 2, 3, 4, 5, 6}, 3, 2), scInts([]int64{3, 0})}, 1,
			[][]int{{3, 2}}, [][]float64{{5, 2, 3, 4, 1, 6}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := callOpT(t, tc.op, tc.opset, tc.outs, tc.attrs, tc.in...)
			require.NoError(t, err)
			require.Len(t, out, len(tc.shape))
			for i := range tc.shape {
				assert.Equal(t, fmt.Sprint(tc.shape[i]), fmt.Sprint(out[i].Shape()), "output %d", i)
				if len(tc.want[i]) == 0 {
					assert.Zero(t, out[i].Value.Len())
					continue
				}
				assert.Equal(t, tc.want[i], scValues(out[i]), "output %d", i)
			}
		})
	}
}

func TestScatterErrors(t *testing.T) {
	t.Parallel()
	x := scF64([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	cases := []struct {
		name  string
		op    string
		opset int
		attrs []any
		in    []*autograd.Var
		want  []string
	}{
		{"ScatterElementsIndex", "ScatterElements", 13, []any{"axis", 1},
			[]*autograd.Var{x, scInts([]int64{0, 3}, 1, 2), scF64([]float64{1, 2}, 1, 2)}, []string{"indices", "index 3"}},
		{"ScatterElementsNegIndex", "ScatterElements", 13, nil,
			[]*autograd.Var{x, scInts([]int64{-3}, 1, 1), scF64([]float64{1}, 1, 1)}, []string{"indices", "index -3"}},
		{"ScatterElementsShape", "ScatterElements", 13, nil,
			[]*autograd.Var{x, scInts([]int64{0, 1}, 1, 2), scF64([]float64{1}, 1, 1)}, []string{"updates", "[1 2]", "[1 1]"}},
		{"ScatterElementsLarge", "ScatterElements", 13, nil,
			[]*autograd.Var{x, scInts([]int64{0, 1, 0, 1}, 1, 4), scF64([]float64{1, 2, 3, 4}, 1, 4)}, []string{"indices", "[1 4]", "[2 3]"}},
		{"ScatterElementsType", "ScatterElements", 13, nil,
			[]*autograd.Var{x, scInts([]int64{0}, 1, 1), scInts([]int64{1}, 1, 1)}, []string{"updates", "int64"}},
		{"ScatterElementsFloatIndices", "Scatter", 9, nil,
			[]*autograd.Var{x, scF64([]float64{0}, 1, 1), scF64([]float64{1}, 1, 1)}, []string{"indices", "integer"}},
		{"ScatterReduction", "ScatterElements", 16, []any{"reduction", "sub"},
			[]*autograd.Var{x, scInts([]int64{0}, 1, 1), scF64([]float64{1}, 1, 1)}, []string{"reduction", "sub"}},
		{"ScatterNDIndex", "ScatterND", 11, nil,
			[]*autograd.Var{x, scInts([]int64{1, 5}, 1, 2), scF64([]float64{1}, 1)}, []string{"indices", "index 5"}},
		{"ScatterNDUpdates", "ScatterND", 11, nil,
			[]*autograd.Var{x, scInts([]int64{1}, 1, 1), scF64([]float64{1, 2}, 1, 2)}, []string{"updates", "[1 3]", "[1 2]"}},
		{"ScatterNDDepth", "ScatterND", 11, nil,
			[]*autograd.Var{x, scInts([]int64{1, 1, 1}, 1, 3), scF64([]float64{1}, 1)}, []string{"indices", "[1 3]"}},
		{"GatherNDIndex", "GatherND", 11, nil,
			[]*autograd.Var{x, scInts([]int64{2}, 1, 1)}, []string{"indices", "index 2"}},
		{"GatherNDBatchDims", "GatherND", 12, []any{"batch_dims", 2},
			[]*autograd.Var{x, scInts([]int64{0, 0}, 2, 1)}, []string{"batch_dims"}},
		{"GatherNDBatchShape", "GatherND", 12, []any{"batch_dims", 1},
			[]*autograd.Var{x, scInts([]int64{0, 0, 0}, 3, 1)}, []string{"batch_dims", "[2 3]", "[3 1]"}},
		{"CompressCondition", "Compress", 11, []any{"axis", 0},
			[]*autograd.Var{x, scInts([]int64{0, 0, 1})}, []string{"condition", "position 2"}},
		{"CompressAxis", "Compress", 11, []any{"axis", 2},
			[]*autograd.Var{x, scInts([]int64{1})}, []string{"axis 2"}},
		{"UniqueAxis", "Unique", 11, []any{"axis", -3}, []*autograd.Var{x}, []string{"axis -3"}},
		{"ReverseSequenceLens", "ReverseSequence", 10, nil,
			[]*autograd.Var{x, scInts([]int64{1, 1, 3})}, []string{"sequence_lens", "length 3"}},
		{"ReverseSequenceShape", "ReverseSequence", 10, nil,
			[]*autograd.Var{x, scInts([]int64{1, 1})}, []string{"sequence_lens", "[3]"}},
		{"ReverseSequenceAxes", "ReverseSequence", 10, []any{"batch_axis", 0},
			[]*autograd.Var{x, scInts([]int64{1, 1})}, []string{"batch_axis", "time_axis"}},
		{"MaxUnpoolIndex", "MaxUnpool", 11, []any{"kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}},
			[]*autograd.Var{scF64([]float64{1}, 1, 1, 1, 1), scInts([]int64{4}, 1, 1, 1, 1)}, []string{"input I", "index 4"}},
		{"MaxUnpoolKernel", "MaxUnpool", 11, []any{"kernel_shape", []int64{2}},
			[]*autograd.Var{scF64([]float64{1}, 1, 1, 1, 1), scInts([]int64{0}, 1, 1, 1, 1)}, []string{"kernel_shape"}},
		{"MaxUnpoolOutputShape", "MaxUnpool", 11, []any{"kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}},
			[]*autograd.Var{scF64([]float64{1}, 1, 1, 1, 1), scInts([]int64{0}, 1, 1, 1, 1), scInts([]int64{1, 1, 1, 1})},
			[]string{"output_shape", "smaller"}},
		{"BitShiftDirection", "BitShift", 11, []any{"direction", "UP"},
			[]*autograd.Var{scInts([]int64{1}), scInts([]int64{1})}, []string{"direction", "UP"}},
		{"BitShiftBroadcast", "BitShift", 11, []any{"direction", "LEFT"},
			[]*autograd.Var{scInts([]int64{1, 2}), scInts([]int64{1, 2, 3})}, []string{"[2]", "[3]"}},
		{"MissingInput", "ScatterND", 11, nil, []*autograd.Var{x, nil}, []string{"indices"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := callOpT(t, tc.op, tc.opset, 1, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.False(t, errors.Is(err, ErrUnsupported), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

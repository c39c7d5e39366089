package onnx

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

func vqRand(rng *rand.Rand, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(rng, -1, 1, shape...).Cast(device.Float64)
}

func TestDetValues(t *testing.T) {
	t.Parallel()
	x := vqF([]float64{1, 2, 3, 4, 0, 1, 1, 0, 2, 4, 1, 2}, 3, 2, 2)
	out, err := callOpT(t, "Det", 11, 1, nil, x)
	require.NoError(t, err)
	assert.Equal(t, []int{3}, out[0].Shape())
	assert.InDeltaSlice(t, []float64{-2, -1, 0}, out[0].Value.Values(), 1e-12)
}

func TestDetGrad(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	f := func(xs []*autograd.Var) *autograd.Var {
		out, err := callOpT(t, "Det", 11, 1, nil, xs[0])
		require.NoError(t, err)
		return out[0]
	}
	assert.NoError(t, autograd.GradCheck(f, []*tensor.Tensor{vqRand(rng, 2, 3, 3)}, autograd.GradCheckOptions{}))
	// A singular matrix: the gradient is the cofactor matrix.
	singular := tensor.FromFloat64([]float64{1, 2, 3, 2, 4, 6, 1, 0, 1}, 3, 3)
	assert.NoError(t, autograd.GradCheck(f, []*tensor.Tensor{singular}, autograd.GradCheckOptions{}))
}

func TestGridSampleGrad(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	grid := autograd.Constant(tensor.RandUniform(rng, -1.2, 1.2, 2, 3, 4, 2).Cast(device.Float64))
	for _, mode := range []string{"bilinear", "nearest", "bicubic"} {
		for _, pad := range []string{"zeros", "border", "reflection"} {
			t.Run(mode+"/"+pad, func(t *testing.T) {
				f := func(xs []*autograd.Var) *autograd.Var {
					out, err := callOpT(t, "GridSample", 16, 1, []any{"mode", mode, "padding_mode", pad}, xs[0], grid)
					require.NoError(t, err)
					return out[0]
				}
				assert.NoError(t, autograd.GradCheck(f, []*tensor.Tensor{vqRand(rng, 2, 2, 4, 5)}, autograd.GradCheckOptions{}))
			})
		}
	}
}

func TestGridSampleIdentity(t *testing.T) {
	t.Parallel()
	// With align_corners the corners of the grid are the corner pixels.
	x := vqF([]float64{1, 2, 3, 4}, 1, 1, 2, 2)
	grid := vqF([]float64{-1, -1, 1, -1, -1, 1, 1, 1}, 1, 2, 2, 2)
	out, err := callOpT(t, "GridSample", 16, 1, []any{"align_corners", 1}, x, grid)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{1, 2, 3, 4}, out[0].Value.Values(), 1e-12)
}

func TestRoiAlignGrad(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	rois := vqF([]float64{0, 0, 3, 3, 1.2, 0.5, 4.5, 3.3, -1, -1, 2, 6}, 3, 4)
	bi := vqI([]int64{0, 1, 1})
	for _, mode := range []string{"avg", "max"} {
		for _, ct := range []string{"half_pixel", "output_half_pixel"} {
			t.Run(mode+"/"+ct, func(t *testing.T) {
				f := func(xs []*autograd.Var) *autograd.Var {
					out, err := callOpT(t, "RoiAlign", 16, 1, []any{"mode", mode, "coordinate_transformation_mode", ct,
						"output_height", 2, "output_width", 3, "spatial_scale", 0.9}, xs[0], rois, bi)
					require.NoError(t, err)
					return out[0]
				}
				assert.NoError(t, autograd.GradCheck(f, []*tensor.Tensor{vqRand(rng, 2, 2, 5, 6)}, autograd.GradCheckOptions{}))
			})
		}
	}
}

func TestRoiAlignEmpty(t *testing.T) {
	t.Parallel()
	out, err := callOpT(t, "RoiAlign", 10, 1, []any{"output_height", 2}, autograd.Constant(tensor.Zeros(1, 3, 4, 4)),
		autograd.Constant(tensor.Zeros(0, 4)), vqI(nil, 0))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3, 2, 1}, out[0].Shape())
}

func TestNonMaxSuppression(t *testing.T) {
	t.Parallel()
	boxes := vqF([]float64{
		0, 0, 1, 1,
		0, 0.1, 1, 1.1,
		0, 5, 1, 6,
		1, 1, 0, 0, // the first box, flipped
	}, 1, 4, 4)
	scores := vqF([]float64{0.9, 0.8, 0.7, 0.95, 0.1, 0.2, 0.3, 0.4}, 1, 2, 4)
	out, err := callOpT(t, "NonMaxSuppression", 11, 1, nil, boxes, scores, vqI([]int64{2}), vqF([]float64{0.5}), vqF([]float64{0.15}))
	require.NoError(t, err)
	assert.Equal(t, []int{4, 3}, out[0].Shape())
	assert.Equal(t, []int64{0, 0, 3, 0, 0, 2, 0, 1, 3, 0, 1, 2}, vqInts(t, out[0]))
	// No max_output_boxes_per_class: nothing is selected.
	out, err = callOpT(t, "NonMaxSuppression", 11, 1, nil, boxes, scores)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3}, out[0].Shape())
}

func TestVisionErrors(t *testing.T) {
	t.Parallel()
	img := autograd.Constant(tensor.Zeros(1, 2, 3, 3))
	grid := autograd.Constant(tensor.Zeros(1, 2, 2, 2))
	rois := autograd.Constant(tensor.Zeros(1, 4))
	boxes := autograd.Constant(tensor.Zeros(1, 3, 4))
	scores := autograd.Constant(tensor.Zeros(1, 2, 3))
	cases := []struct {
		name, op string
		opset    int
		attrs    []any
		in       []*autograd.Var
		want     string
	}{
		{"not square", "Det", 11, nil, []*autograd.Var{autograd.Constant(tensor.Zeros(2, 3))}, "square"},
		{"int input", "Det", 11, nil, []*autograd.Var{vqI([]int64{1, 2, 3, 4}, 2, 2)}, "float"},
		{"grid shape", "GridSample", 16, nil, []*autograd.Var{img, autograd.Constant(tensor.Zeros(1, 2, 2, 3))}, "grid"},
		{"grid batch", "GridSample", 16, nil, []*autograd.Var{img, autograd.Constant(tensor.Zeros(2, 2, 2, 2))}, "grid"},
		{"mode", "GridSample", 16, []any{"mode", "linear"}, []*autograd.Var{img, grid}, "mode"},
		{"padding", "GridSample", 16, []any{"padding_mode", "wrap"}, []*autograd.Var{img, grid}, "padding_mode"},
		{"rank", "GridSample", 16, nil, []*autograd.Var{autograd.Constant(tensor.Zeros(2, 3)), grid}, "N×C×H×W"},
		{"batch index", "RoiAlign", 16, nil, []*autograd.Var{img, rois, vqI([]int64{3}, 1)}, "batch_indices"},
		{"rois shape", "RoiAlign", 16, nil, []*autograd.Var{img, autograd.Constant(tensor.Zeros(1, 5)), vqI([]int64{0}, 1)}, "rois"},
		{"roi mode", "RoiAlign", 16, []any{"mode", "sum"}, []*autograd.Var{img, rois, vqI([]int64{0}, 1)}, "mode"},
		{"transformation", "RoiAlign", 16, []any{"coordinate_transformation_mode", "asymmetric"}, []*autograd.Var{img, rois, vqI([]int64{0}, 1)}, "coordinate_transformation_mode"},
		{"output size", "RoiAlign", 16, []any{"output_height", 0}, []*autograd.Var{img, rois, vqI([]int64{0}, 1)}, "output_height"},
		{"float indices", "RoiAlign", 16, nil, []*autograd.Var{img, rois, vqF([]float64{0})}, "batch_indices"},
		{"boxes shape", "NonMaxSuppression", 11, nil, []*autograd.Var{autograd.Constant(tensor.Zeros(1, 3, 5)), scores}, "boxes"},
		{"scores shape", "NonMaxSuppression", 11, nil, []*autograd.Var{boxes, autograd.Constant(tensor.Zeros(1, 2, 4))}, "scores"},
		{"iou", "NonMaxSuppression", 11, nil, []*autograd.Var{boxes, scores, vqI([]int64{1}), vqF([]float64{2})}, "iou_threshold"},
		{"center", "NonMaxSuppression", 11, []any{"center_point_box", 2}, []*autograd.Var{boxes, scores}, "center_point_box"},
		{"max output shape", "NonMaxSuppression", 11, nil, []*autograd.Var{boxes, scores, vqI([]int64{1, 2})}, "max_output_boxes_per_class"},
	}
	for _, tc := range cases {
		t.Run(tc.op+"/"+tc.name, func(t *testing.T) {
			_, err := callOpT(t, tc.op, tc.opset, 1, tc.attrs, tc.in...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, errors.Is(err, ErrUnsupported), "a bad input is not unsupported: %v", err)
		})
	}
	_, err := callOpT(t, "GridSample", 16, 1, nil, autograd.Constant(tensor.Zeros(1, 1, 2, 2, 2)), autograd.Constant(tensor.Zeros(1, 2, 2, 2, 3)))
	assert.ErrorIs(t, err, ErrUnsupported)
}

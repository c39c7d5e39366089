package tensor_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// TestChannelsLastOrder checks IsChannelsLast and ToChannelsLast: the
// copy holds the same values, is channels-last and not contiguous; a
// contiguous tensor is not channels-last unless it has one channel or a
// 1×1 plane; a tensor that is channels-last comes back as it is; only 4-D
// tensors convert.
func TestChannelsLastOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 4, 5)
	assert.False(t, x.IsChannelsLast())
	cl := x.ToChannelsLast()
	assert.True(t, cl.IsChannelsLast())
	assert.False(t, cl.IsContiguous())
	assert.Equal(t, x.Shape(), cl.Shape())
	assert.Equal(t, x.Float32s(), cl.Contiguous().Float32s())
	assert.Same(t, cl, cl.ToChannelsLast())
	assert.True(t, tensor.RandNormal(rng, 0, 1, 2, 1, 4, 5).IsChannelsLast(), "one channel")
	assert.True(t, tensor.RandNormal(rng, 0, 1, 2, 3, 1, 1).IsChannelsLast(), "a 1×1 plane")
	assert.False(t, x.Slice(1, 0, 2).IsChannelsLast(), "a view of part of the channels")
	assert.Panics(t, func() { tensor.RandNormal(rng, 0, 1, 3, 4, 5).ToChannelsLast() })
}

// TestConvChannelsLast checks that the convolutions honour
// ConvOptions.ChannelsLast on the CPU and give the N×C×H×W results within
// float32 rounding: a depthwise layer from and to channels-last order, a
// 1×1 layer with a residual given N×C×H×W (read in the output's order)
// into channels-last order, then into N×C×H×W, and a 3×3 layer, which has
// no channels-last kernel, on a channels-last input.
func TestConvChannelsLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	x := tensor.RandNormal(rng, 0, 1, 2, 16, 7, 7)
	dw := tensor.RandNormal(rng, 0, 1, 16, 1, 3, 3)
	pw := tensor.RandNormal(rng, 0, 1, 24, 16, 1, 1)
	full := tensor.RandNormal(rng, 0, 1, 8, 16, 3, 3)
	bias16, bias24, bias8 := tensor.RandNormal(rng, 0, 1, 16), tensor.RandNormal(rng, 0, 1, 24), tensor.RandNormal(rng, 0, 1, 8)
	res := tensor.RandNormal(rng, 0, 1, 2, 24, 7, 7)
	dwOpts := tensor.ConvOptions{PadH: 1, PadW: 1, Groups: 16}
	cl := tensor.ConvOptions{ChannelsLast: true}

	want := tensor.Conv2DBiasAct(x, dw, bias16, dwOpts, device.ActReLU6)
	dwCL := dwOpts
	dwCL.ChannelsLast = true
	got := tensor.Conv2DBiasAct(x.ToChannelsLast(), dw, bias16, dwCL, device.ActReLU6)
	require.True(t, got.IsChannelsLast(), "depthwise output")
	assert.True(t, tensor.AllClose(got, want, 1e-5, 1e-5), "depthwise")

	want2 := tensor.Conv2DBiasAddAct(want, pw, bias24, res, tensor.ConvOptions{}, device.ActReLU)
	got2 := tensor.Conv2DBiasAddAct(got, pw, bias24, res, cl, device.ActReLU)
	require.True(t, got2.IsChannelsLast(), "1×1 output")
	assert.True(t, tensor.AllClose(got2, want2, 1e-5, 1e-5), "1×1 with a residual")
	got3 := tensor.Conv2DBiasAct(got, pw, bias24, tensor.ConvOptions{}, device.ActNone)
	assert.True(t, got3.IsContiguous(), "1×1 into planes")
	assert.True(t, tensor.AllClose(got3, tensor.Conv2DBiasAct(want, pw, bias24, tensor.ConvOptions{}, device.ActNone), 1e-5, 1e-5), "1×1 into planes")

	fullOpts := tensor.ConvOptions{PadH: 1, PadW: 1, ChannelsLast: true}
	got4 := tensor.Conv2DBiasAct(got, full, bias8, fullOpts, device.ActReLU)
	want4 := tensor.Conv2DBiasAct(want, full, bias8, tensor.ConvOptions{PadH: 1, PadW: 1}, device.ActReLU)
	assert.True(t, tensor.AllClose(got4, want4, 1e-5, 1e-5), "3×3 on a channels-last input")
}

// TestGlobalAvgPoolChannelsLast checks the pooling of channels-last order
// against the mean of the planes, in float32 and float64, on batches of
// one to 32 images (32 of 7×7×64 split across the CPU's workers), planes
// of 1 to 49 positions and channel counts off the vector width; and that
// it declines tensors that are not channels-last only.
func TestGlobalAvgPoolChannelsLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	for _, dt := range []device.DType{device.Float32, device.Float64} {
		for _, shape := range [][]int{{1, 1280, 7, 7}, {32, 64, 7, 7}, {5, 37, 3, 4}, {2, 17, 1, 2}, {3, 16, 2, 1}} {
			x := tensor.RandNormal(rng, 0, 1, shape...).Cast(dt)
			cl := x.ToChannelsLast()
			require.False(t, cl.IsContiguous(), "%v", shape)
			got := tensor.GlobalAvgPoolChannelsLast(cl)
			require.NotNil(t, got, "%v %v", dt, shape)
			assert.Equal(t, []int{shape[0], shape[1], 1, 1}, got.Shape())
			want := x.MeanAxes([]int{2, 3}, true)
			assert.InDeltaSlice(t, want.Values(), got.Values(), 1e-5, "%v %v", dt, shape)
		}
	}
	x := tensor.RandNormal(rng, 0, 1, 2, 3, 4, 5)
	assert.Nil(t, tensor.GlobalAvgPoolChannelsLast(x), "planes")
	assert.Nil(t, tensor.GlobalAvgPoolChannelsLast(tensor.RandNormal(rng, 0, 1, 2, 3, 1, 1)), "channels-last and contiguous")
}

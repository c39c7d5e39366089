package tensor_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// TestMaxPool2DValuesMatchesMaxPool2D checks that the values-only pooling
// returns MaxPool2D's maxima, for strided, padded and non-contiguous
// inputs.
func TestMaxPool2DValuesMatchesMaxPool2D(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, o := range []tensor.PoolOptions{
		{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
		{KH: 2, KW: 2},
		{KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1},
		{KH: 5, KW: 5, StrideH: 3, StrideW: 3, PadH: 2, PadW: 2},
	} {
		for _, dt := range []device.DType{device.Float32, device.Float64} {
			t.Run(fmt.Sprintf("%v/%+v", dt, o), func(t *testing.T) {
				x := randTensor(rng, dt, 2, 13, 11, 3).Permute(0, 3, 1, 2)
				want, _ := tensor.MaxPool2D(x, o)
				got := tensor.MaxPool2DValues(x, o)
				assert.Equal(t, want.Shape(), got.Shape())
				assert.Equal(t, want.Values(), got.Values())
			})
		}
	}
}

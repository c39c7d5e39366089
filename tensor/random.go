package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hora-dl/hora/device"
)

// RandUniform returns a float32 CPU tensor with values drawn uniformly
// from [lo, hi) by rng.
func RandUniform(rng *rand.Rand, lo, hi float64, shape ...int) *Tensor {
	data := make([]float32, numElements(shape))
	for i := range data {
		v := float32(lo + (hi-lo)*rng.Float64())
		if float64(v) >= hi && hi > lo { // rounding to float32 reached hi
			v = math.Nextafter32(float32(hi), float32(math.Inf(-1)))
		}
		data[i] = v
	}
	return FromFloat32(data, shape...)
}

// RandNormal returns a float32 CPU tensor with values drawn from the
// normal distribution N(mean, std²) by rng.
func RandNormal(rng *rand.Rand, mean, std float64, shape ...int) *Tensor {
	data := make([]float32, numElements(shape))
	for i := range data {
		data[i] = float32(mean + std*rng.NormFloat64())
	}
	return FromFloat32(data, shape...)
}

// Fans returns the fan-in and fan-out of a weight shape as PyTorch
// computes them: for Linear out×in they are in and out; for Conv
// out×in×kh×kw they are in·kh·kw and out·kh·kw.
func Fans(shape []int) (fanIn, fanOut int) {
	if len(shape) < 2 {
		panic(fmt.Sprintf("tensor: fans of shape %v need at least 2 dimensions", shape))
	}
	receptive := 1
	for _, d := range shape[2:] {
		receptive *= d
	}
	return shape[1] * receptive, shape[0] * receptive
}

// KaimingUniform draws from U(-b, b) with b = gain·√(3/fan_in), gain =
// √(2/(1+a²)) for leaky-ReLU slope a. PyTorch's Linear and Conv2d default
// initialisation is KaimingUniform with a = √5.
func KaimingUniform(rng *rand.Rand, a float64, shape ...int) *Tensor {
	fanIn, _ := Fans(shape)
	gain := math.Sqrt(2 / (1 + a*a))
	b := gain * math.Sqrt(3/float64(fanIn))
	return RandUniform(rng, -b, b, shape...)
}

// KaimingNormal draws from N(0, std²) with std = √(2/fan_in) (ReLU gain).
func KaimingNormal(rng *rand.Rand, shape ...int) *Tensor {
	fanIn, _ := Fans(shape)
	return RandNormal(rng, 0, math.Sqrt(2/float64(fanIn)), shape...)
}

// XavierUniform draws from U(-b, b) with b = √(6/(fan_in+fan_out)).
func XavierUniform(rng *rand.Rand, shape ...int) *Tensor {
	fanIn, fanOut := Fans(shape)
	b := math.Sqrt(6 / float64(fanIn+fanOut))
	return RandUniform(rng, -b, b, shape...)
}

// XavierNormal draws from N(0, std²) with std = √(2/(fan_in+fan_out)).
func XavierNormal(rng *rand.Rand, shape ...int) *Tensor {
	fanIn, fanOut := Fans(shape)
	return RandNormal(rng, 0, math.Sqrt(2/float64(fanIn+fanOut)), shape...)
}

// numElements returns the product of shape, panicking on a negative
// dimension. (The panic copies shape, so that shape does not escape.)
func numElements(shape []int) int {
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("tensor: negative dimension in shape %v", slices.Clone(shape)))
		}
	}
	return device.NumElements(shape)
}

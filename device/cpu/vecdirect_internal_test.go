package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
)

// vecCases: ResNet-20's and ResNet-8's 7×7 layers (output channels a
// multiple of 16, and 24 = 16 + 8), their stride-2 layers, runs of images
// whose last block of positions is partly empty, weight gradients of
// several images per chunk, and the directCases (planes of one position
// or larger than a task, dilation, asymmetric padding, output channels
// not a multiple of the block).
var vecCases = append([]device.ConvParams{
	convCase(7, 64, 7, 7, 64, 3, 1, 1, 1),
	convCase(3, 24, 7, 7, 24, 3, 1, 1, 1),
	convCase(5, 32, 14, 14, 64, 3, 2, 1, 1),
	convCase(2, 96, 7, 7, 96, 3, 1, 1, 1),
	convCase(9, 16, 5, 5, 16, 3, 1, 1, 1),
	convCase(40, 16, 14, 14, 32, 3, 2, 1, 1), // weight gradient chunks of 3 images
	convCase(34, 8, 20, 20, 16, 3, 1, 1, 1),  // chunks of 1200 positions, in runs
}, directCases...)

// TestVecDirectMatchesReference runs the channel-vector direct
// convolution, with bias and ReLU6, its weight gradient and (at unit
// stride) its input gradient against float64 reference loops, on one to
// three workers, whether or not the machine would choose the path.
func TestVecDirectMatchesReference(t *testing.T) {
	t.Parallel()
	testConvPaths(t, rand.New(rand.NewPCG(41, 42)), vecCases, convPaths{
		forward: func(dev *Device, s convShape, act device.Activation, y, x, w, bias []float32) {
			conv2dVec(dev, s, act, y, x, w, bias, nil)
		},
		gradWeight: conv2dVecGradWeight,
		gradInput:  conv2dVecGradInput,
	})
}

// TestVecDirectAllocatesNothing checks that the channel-vector kernels
// allocate nothing once their scratch buffers exist (their tables live on
// the stack), past what launching the tasks costs.
func TestVecDirectAllocatesNothing(t *testing.T) {
	dev := New()
	dev.SetThreads(2)
	s := newConvShape(convCase(32, 64, 7, 7, 64, 3, 1, 1, 1))
	rng := rand.New(rand.NewPCG(43, 44))
	x, w, dy := randSlice(rng, s.N*s.imgIn), randSlice(rng, s.OutC*s.ckk), randSlice(rng, s.N*s.imgOut)
	y, dw := make([]float32, s.N*s.imgOut), make([]float32, s.OutC*s.ckk)
	for name, f := range map[string]func(){
		"forward":         func() { conv2dVec(dev, s, device.ActReLU, y, x, w, nil, nil) },
		"weight gradient": func() { conv2dVecGradWeight(dev, s, dw, dy, x) },
		"input gradient":  func() { conv2dVecGradInput(dev, s, x, dy, w) },
	} {
		f()
		if n := testing.AllocsPerRun(20, f); n > 1 {
			t.Errorf("%s: %v allocations a call", name, n)
		}
	}
}

package models

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// TestImageModelsForAnyShape builds the CNN and LeNet-5 for image shapes
// other than Fashion-MNIST's and checks the logits' shape, and that
// images too small are refused with the size in the message.
func TestImageModelsForAnyShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	builders := map[string]func(ImageShape, int, *rand.Rand) (*Net, error){"cnn": NewCNNFor, "lenet5": NewLeNet5For}
	for name, build := range builders {
		for _, in := range []ImageShape{{3, 64, 64}, {1, 28, 28}, {3, 32, 48}, {2, 13, 17}} {
			net, err := build(in, 5, rng)
			if err != nil {
				t.Fatalf("%s %s: %v", name, in, err)
			}
			x := tensor.Zeros(2, in.Channels, in.Height, in.Width)
			out := net.Forward(autograd.Constant(x)).Value
			if s := out.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 5 {
				t.Errorf("%s %s: logits %v, expected [2 5]", name, in, s)
			}
		}
		_, err := build(ImageShape{1, 3, 3}, 10, rng)
		if err == nil || !strings.Contains(err.Error(), "1×3×3") {
			t.Errorf("%s on 1×3×3 images: error %v, expected one naming the size", name, err)
		}
	}
}

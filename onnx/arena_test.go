package onnx

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

// TestInferenceRunsReuseMemory checks that the runs of a Frozen model
// reuse the memory of the previous run of the same input shapes, that the
// outputs they return are copies that later runs do not overwrite, that
// shapes may alternate and runs be concurrent, with the plain model's
// values throughout; and that a model that records gradients keeps
// allocating (its tape must stay valid).
func TestInferenceRunsReuseMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	resnet, err := models.NewResNet(models.ResNetConfig{Layers: []int{1, 1}, Widths: []int{8, 16}, InChannels: 3, Classes: 5, Stem: "cifar"}, rng)
	require.NoError(t, err)
	layers.Eval(resnet)
	var buf bytes.Buffer
	require.NoError(t, Export(resnet, []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 3, 12, 12)}, &buf, ExportOptions{}))
	frozen, err := Import(bytes.NewReader(buf.Bytes()), Frozen())
	require.NoError(t, err)
	plain, err := Import(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	layers.Eval(plain)

	run := func(m *Model, x *tensor.Tensor) []float32 {
		outs, err := m.Run(autograd.Constant(x))
		require.NoError(t, err)
		return outs[0].Value.Float32s()
	}
	var inputs []*tensor.Tensor
	var want, first [][]float32
	for _, n := range []int{2, 3, 2, 3, 2} {
		x := tensor.RandNormal(rng, 0, 1, n, 3, 12, 12)
		inputs = append(inputs, x)
		want = append(want, run(plain, x))
		outs, err := frozen.Run(autograd.Constant(x))
		require.NoError(t, err)
		assert.True(t, outs[0].Value.Arena() == nil, "an output in the run's arena")
		first = append(first, outs[0].Value.Float32s()) // the slice of the output itself
	}
	assert.Len(t, frozen.arenas, 2, "one arena per input shape")
	assert.Empty(t, plain.arenas, "a model with parameters that require gradients reuses no memory")
	for i := range want {
		assert.InDeltaSlice(t, want[i], first[i], 1e-5, "run %d, read after the later runs", i)
	}

	var wg sync.WaitGroup
	for i, x := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := run(frozen, x)
			if !slices.Equal(got, first[i]) {
				t.Errorf("concurrent run %d differs from the sequential one", i)
			}
		}()
	}
	wg.Wait()
}

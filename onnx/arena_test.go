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
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

// exportedResNet exports a small CIFAR-style ResNet (blocks per stage
// as given, 8 and 16 channels, size×size inputs of 3 channels) and
// imports it twice: Frozen, and as a plain model in evaluation mode.
func exportedResNet(t *testing.T, rng *rand.Rand, blocks []int, size int) (frozen, plain *Model) {
	t.Helper()
	resnet, err := models.NewResNet(models.ResNetConfig{Layers: blocks, Widths: []int{8, 16}, InChannels: 3, Classes: 5, Stem: "cifar"}, rng)
	require.NoError(t, err)
	layers.Eval(resnet)
	var buf bytes.Buffer
	require.NoError(t, Export(resnet, []*tensor.Tensor{tensor.RandNormal(rng, 0, 1, 2, 3, size, size)}, &buf, ExportOptions{}))
	frozen, err = Import(bytes.NewReader(buf.Bytes()), Frozen())
	require.NoError(t, err)
	plain, err = Import(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	layers.Eval(plain)
	return frozen, plain
}

// TestInferenceRunsReuseMemory checks that the runs of a Frozen model
// reuse the memory of the previous run of the same input shapes, that the
// outputs they return are copies that later runs do not overwrite, that
// shapes may alternate and runs be concurrent, with the plain model's
// values throughout; and that a model that records gradients keeps
// allocating (its tape must stay valid).
func TestInferenceRunsReuseMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	frozen, plain := exportedResNet(t, rng, []int{1, 1}, 12)

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

// TestBufferReuseWaitsForViews checks the bookkeeping that hands an
// inference run's dead values back to its arena: a buffer that a view
// still holds (a Reshape's output) stays out of the arena until the view
// is dropped too, and buffers the run did not take from the arena are
// never handed to it.
func TestBufferReuseWaitsForViews(t *testing.T) {
	arena := tensor.NewArena()
	x := tensor.FromFloat32(make([]float32, 16), 4, 4)
	reuse := newBufferReuse(arena)
	a := autograd.Constant(x.WithArena(arena).Neg()) // from the arena
	view := autograd.Constant(a.Value.Reshape(2, 8)) // shares a's buffer
	reuse.hold(a)
	reuse.hold(view)
	input := autograd.Constant(x.WithArena(arena)) // not the arena's
	reuse.drop(input)

	reuse.drop(a)
	next := x.WithArena(arena).Neg()
	assert.False(t, next.Buffer() == view.Value.Buffer(), "a buffer a live view holds was handed out again")
	assert.Equal(t, []float32{0, 0, 0, 0}, view.Value.Float32s()[:4], "the view's values changed")

	reuse.drop(view)
	last := x.WithArena(arena).AddScalar(1)
	assert.True(t, last.Buffer() == view.Value.Buffer() || last.Buffer() == a.Value.Buffer(),
		"the buffer of the last dropped holder was not reused")
	var nilReuse *bufferReuse // a run that records gradients
	nilReuse.hold(a)
	nilReuse.drop(a)
}

// TestInferenceRunReusesDeadValues checks that an inference run of a
// residual network holds less memory than the sum of its intermediate
// values (those no later node reads go back to the arena), with the
// plain model's outputs.
func TestInferenceRunReusesDeadValues(t *testing.T) {
	pinCacheSharing(t, true)
	rng := rand.New(rand.NewPCG(23, 24))
	frozen, plain := exportedResNet(t, rng, []int{2, 2}, 16)

	x := tensor.RandNormal(rng, 0, 1, 4, 3, 16, 16)
	want, err := plain.Run(autograd.Constant(x))
	require.NoError(t, err)
	for run := range 3 {
		got, err := frozen.Run(autograd.Constant(x))
		require.NoError(t, err)
		assert.InDeltaSlice(t, want[0].Value.Float32s(), got[0].Value.Float32s(), 1e-5, "run %d", run)
	}
	// Every Conv, Relu and Add writes at least 4·16·8·8 floats (the
	// second stage's activations); without reuse the arena would hold
	// them all.
	least := 0
	for _, n := range frozen.nodes {
		switch n.proto.GetOpType() {
		case "Conv", "Relu", "Add":
			least += 4 * 4 * 16 * 8 * 8
		}
	}
	require.Len(t, frozen.arenas, 1)
	for _, a := range frozen.arenas {
		assert.Less(t, a.Bytes(), least, "the run's arena holds every intermediate value")
	}
}

// TestLargeRunsTakeExactSizes checks that the runs of a signature whose
// arena held more than maxSharedArena go on with an arena of exact sizes,
// with the same outputs bit for bit, and that smaller ones keep sharing.
func TestLargeRunsTakeExactSizes(t *testing.T) {
	pinCacheSharing(t, true)
	rng := rand.New(rand.NewPCG(23, 24))
	frozen, _ := exportedResNet(t, rng, []int{1, 1}, 12)
	x := autograd.Constant(tensor.RandNormal(rng, 0, 1, 2, 3, 12, 12))
	key := frozen.signature([]*autograd.Var{x})
	runs := func() [][]float32 {
		var outs [][]float32
		for range 3 {
			o, err := frozen.Run(x)
			require.NoError(t, err)
			outs = append(outs, o[0].Value.Float32s())
		}
		return outs
	}
	shared := runs()
	require.True(t, frozen.arenas[key].SharesSizes(), "a run of a few kilobytes stopped sharing sizes")

	saved := maxSharedArena
	defer func() { maxSharedArena = saved }()
	maxSharedArena = 1 // every arena is too large to share
	clear(frozen.arenas)
	exact := runs()
	assert.False(t, frozen.arenas[key].SharesSizes(), "a run past maxSharedArena still shares sizes")
	assert.NotZero(t, frozen.arenas[key].Bytes(), "the exact arena holds the run's buffers")
	for i := range exact {
		assert.Equal(t, shared[i], exact[i], "run %d", i)
	}
}

// TestSignatureNamesShapesTypesAndDevice checks the key of a run's arena
// and shape-only values: the device, then each input's shape and type.
func TestSignatureNamesShapesTypesAndDevice(t *testing.T) {
	var m Model
	a := autograd.Constant(tensor.Zeros(1, 3, 224, 224))
	b := autograd.Constant(tensor.FromFloat64([]float64{1, 2}, 2))
	c := autograd.Constant(tensor.Zeros(1, 3, 22, 4224))
	assert.Equal(t, "cpu[1 3 224 224] float32;[2] float64;", m.signature([]*autograd.Var{a, b}))
	assert.NotEqual(t, m.signature([]*autograd.Var{a}), m.signature([]*autograd.Var{c}))
	assert.Equal(t, "cpu[] float32;", m.signature([]*autograd.Var{autograd.Constant(tensor.Scalar(1))}))
}

// pinCacheSharing makes the device's threads share a cache (or not) for
// the arenas of t's runs, whatever the machine's state; t must not be
// parallel.
func pinCacheSharing(t *testing.T, shared bool) {
	saved := sharesCache
	sharesCache = func(device.Device) bool { return shared }
	t.Cleanup(func() { sharesCache = saved })
}

// TestArenaFollowsCacheSharing checks that the runs of a signature take
// buffers of exact sizes while the device's threads share no cache and
// share buffers between sizes again once they do, with the same outputs
// bit for bit either way.
func TestArenaFollowsCacheSharing(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	frozen, _ := exportedResNet(t, rng, []int{1, 1}, 12)
	x := autograd.Constant(tensor.RandNormal(rng, 0, 1, 2, 3, 12, 12))
	key := frozen.signature([]*autograd.Var{x})
	var want []float32
	for i, shared := range []bool{true, true, false, false, false, true, true, false, true} {
		pinCacheSharing(t, shared)
		o, err := frozen.Run(x)
		require.NoError(t, err)
		if want == nil {
			want = o[0].Value.Float32s()
		}
		assert.Equal(t, want, o[0].Value.Float32s(), "run %d", i)
		assert.Equal(t, shared, frozen.arenas[key].SharesSizes(), "run %d: the next run's arena", i)
	}
}

package train

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// TestTrainExportsAndFineTunesONNX trains the CNN, exports it with
// -export-onnx, checks that the file computes what the checkpoint's
// weights compute, then fine-tunes the exported file with model "onnx".
func TestTrainExportsAndFineTunesONNX(t *testing.T) {
	dataDir := syntheticFashion(t, 600, 200)
	out := t.TempDir()
	exported := filepath.Join(out, "cnn.onnx")
	cnn := "../configs/fashion-mnist-cnn.yaml"
	code, stdout, stderr := runTrain(t, "-config", cnn, "-set", "data.dir="+dataDir,
		"-set", "train.epochs=1", "-set", "train.batch_size=32", "-out", out, "-export-onnx", exported)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "exported the model to "+exported)

	m, err := onnx.Load(exported)
	require.NoError(t, err)
	require.Len(t, m.Inputs, 1)
	assert.Equal(t, "input: float[batch,1,28,28]", m.Inputs[0].String())
	weights, _, err := checkpoint.Load(filepath.Join(out, "model.safetensors"))
	require.NoError(t, err)
	for _, p := range m.Parameters() {
		w, ok := weights[p.Name]
		require.True(t, ok, "the ONNX initializer %q is named as in the checkpoint", p.Name)
		assert.Equal(t, w.Float32s(), p.Value.Float32s(), p.Name)
	}
	x := tensor.RandUniform(rand.New(rand.NewPCG(1, 2)), 0, 1, 3, 1, 28, 28)
	outs, err := m.Run(autograd.NoGrad(autograd.Constant(x)))
	require.NoError(t, err)
	// The same weights in the Go model give the same logits.
	net := models.NewCNN(10, rand.New(rand.NewPCG(9, 9)))
	require.NoError(t, layers.LoadStateDict(net, weights))
	layers.Eval(net)
	want := net.Forward(autograd.NoGrad(autograd.Constant(x)))
	require.Equal(t, []int{3, 10}, outs[0].Shape())
	assert.InDeltaSlice(t, want.Value.Float32s(), outs[0].Value.Float32s(), 1e-5)

	// Fine-tune the exported model: "onnx" with model.file.
	out2 := t.TempDir()
	code, stdout, stderr = runTrain(t, "-config", cnn, "-set", "data.dir="+dataDir,
		"-set", "model.name=onnx", "-set", "model.file="+exported,
		"-set", "train.epochs=1", "-set", "train.batch_size=32", "-out", out2)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	metrics := readMetrics(t, filepath.Join(out2, "metrics.jsonl"))
	assert.Greater(t, metrics[0]["test_accuracy"], 0.9, "fine-tuning a trained model keeps it accurate")
}

func TestTrainONNXBadInput(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	cnn := "../configs/fashion-mnist-cnn.yaml"
	garbage := filepath.Join(t.TempDir(), "garbage.onnx")
	require.NoError(t, os.WriteFile(garbage, []byte("not a model"), 0o644))
	unwritable := filepath.Join(garbage, "dir", "m.onnx") // under a file: no folder can be made
	// A model of the right input but 1000 outputs (a resnet-style head).
	wrongHead := filepath.Join(t.TempDir(), "wide.onnx")
	net, err := models.NewMLP(models.MLPConfig{In: 784, Hidden: []int{8}, Classes: 1000, Activation: "relu"}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	require.NoError(t, onnx.ExportFile(wrongHead, net, []*tensor.Tensor{tensor.Zeros(1, 1, 28, 28)}, onnx.ExportOptions{}))
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"onnx without file", []string{"-set", "model.name=onnx"}, []string{"model.file"}},
		{"file without onnx", []string{"-set", "model.file=x.onnx"}, []string{"model.file", `only read for model "onnx"`}},
		{"missing file", []string{"-set", "model.name=onnx", "-set", "model.file=/nonexistent.onnx"}, []string{"/nonexistent.onnx"}},
		{"garbage file", []string{"-set", "model.name=onnx", "-set", "model.file=" + garbage}, []string{"garbage.onnx", "not an ONNX model"}},
		{"wrong output", []string{"-set", "model.name=onnx", "-set", "model.file=" + wrongHead}, []string{"wide.onnx", `output "output" is [2 1000] for a batch of 2 samples, expected [2 10] (one logit per class of the data; set model.head.classes`}},
		{"unwritable export", []string{"-export-onnx", unwritable}, []string{"export.onnx", unwritable}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-config", cnn, "-set", "data.dir=" + dataDir, "-out", t.TempDir()}, c.args...)
			code, _, stderr := runTrain(t, args...)
			assert.Equal(t, 2, code, stderr)
			for _, w := range c.want {
				assert.Contains(t, stderr, w)
			}
			assert.NotContains(t, stderr, "panic")
		})
	}
}

package train

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/internal/interop"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// shapeClasses are the classes of scripts/shapes, in label order.
var shapeClasses = []string{"circle", "cross", "ring", "square", "triangle"}

// writeRGBPNG writes a w×h RGB PNG of a red square on a grey background.
func writeRGBPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{120, 120, 120, 255}
			if x > w/4 && x < 3*w/4 && y > h/4 && y < 3*h/4 {
				c = color.RGBA{220, 30, 30, 255}
			}
			img.Set(x, y, c)
		}
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, png.Encode(f, img))
	require.NoError(t, f.Close())
}

// TestTrainTorchvisionTransfer fine-tunes torchvision's resnet18 (backbone
// frozen with model.freeze ["*"], only the new model.head trains) and
// mobilenet_v2 (everything trains) on a small RGB image folder
// (scripts/shapes, data set "images" with ImageNet statistics) through the
// train command. For each it checks that the run succeeds, that the
// training loss falls, that data.json names the five classes, that the
// frozen backbone's weights and BatchNorm statistics in model.safetensors
// are the ONNX file's initializers unchanged (and that the unfrozen one's
// moved); that the export command's file computes in onnxruntime the
// logits the trained model computes in Hora for three validation images
// transformed as predict transforms them (within 1e-4); and that predict
// classifies an image of another size (100×80) with -top-k 2.
func TestTrainTorchvisionTransfer(t *testing.T) {
	if testing.Short() {
		t.Skip("exports torchvision models with PyTorch and fine-tunes them; skipped with -short")
	}
	files := interop.TorchvisionModels(t)
	script := interop.ORTScript(t)

	dataDir := t.TempDir()
	start := time.Now()
	cmd := exec.Command("go", "run", "./scripts/shapes", "-out", dataDir, "-train", "12", "-val", "4", "-size", "64")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", cmd, out)
	t.Logf("scripts/shapes: %v", time.Since(start).Round(time.Millisecond))
	valImages, err := filepath.Glob(filepath.Join(dataDir, "val", "*", "*"))
	require.NoError(t, err)
	require.Len(t, valImages, 20)
	// Three validation images of different classes.
	batch := []string{valImages[0], valImages[4], valImages[8]}
	odd := filepath.Join(t.TempDir(), "odd.png")
	writeRGBPNG(t, odd, 100, 80)

	for _, tc := range []struct {
		name     string
		frozen   bool
		conv     string // the first convolution's weight
		features int    // the new head's inputs
		epochs   int
	}{
		// A head on the random backbone's large features learns slowly:
		// five epochs (0.2 s each) make its fall clear.
		{"resnet18", true, "conv1.weight", 512, 5},
		{"mobilenet_v2", false, "features.0.0.weight", 1280, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := files[tc.name]
			freeze := ""
			if tc.frozen {
				freeze = `, freeze: ["*"]`
			}
			config := filepath.Join(t.TempDir(), tc.name+".yaml")
			require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`data: {name: images, dir: %q, image_size: [64, 64], channels: 3, stats: imagenet}
model: {name: onnx, file: %q, head: {classes: 5}%s}
optimizer: {name: adam, lr: 1.0e-3}
train: {epochs: %d, batch_size: 20, eval_batch_size: 20}
output: {plot: false, progress: false}
`, dataDir, file, freeze, tc.epochs)), 0o644))
			run := t.TempDir()
			start := time.Now()
			code, stdout, stderr := runTrain(t, "-config", config, "-out", run)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			t.Logf("training: %v", time.Since(start).Round(time.Millisecond))

			epochs := readMetrics(t, filepath.Join(run, "metrics.jsonl"))
			require.Len(t, epochs, tc.epochs)
			var losses []float64
			for _, e := range epochs {
				losses = append(losses, e["train_loss"])
			}
			assert.Less(t, losses[len(losses)-1], losses[0], "the training loss falls: %.4f", losses)
			t.Logf("train_loss by epoch: %.4f", losses)

			info, err := readRunData(run)
			require.NoError(t, err)
			require.NotNil(t, info, "data.json")
			assert.Equal(t, shapeClasses, info.Classes)
			assert.Equal(t, []int{3, 64, 64}, info.SampleShape)
			require.NotNil(t, info.Image)
			assert.InDeltaSlice(t, []float32{0.485, 0.456, 0.406}, info.Image.Mean, 1e-6)

			// The backbone in the final weights, against the ONNX file's.
			weights, _, err := checkpoint.Load(filepath.Join(run, modelFile))
			require.NoError(t, err)
			require.NotNil(t, weights["head.weight"], "head.weight is saved")
			assert.Equal(t, []int{5, tc.features}, weights["head.weight"].Shape())
			orig, err := onnx.Load(file, onnx.WithoutHead())
			require.NoError(t, err)
			initial := map[string]*tensor.Tensor{}
			for _, p := range orig.Parameters() {
				initial[p.Name] = p.Value
			}
			for _, b := range orig.Buffers() {
				initial[b.Name] = b.Value
			}
			require.NotNil(t, initial[tc.conv], "the first convolution keeps its PyTorch name")
			require.NotNil(t, weights[tc.conv], "%s is saved", tc.conv)
			require.Len(t, weights, len(initial)+2, "the backbone's parameters and buffers, head.weight and head.bias")
			var moved []string
			for name, w := range initial {
				got, ok := weights[name]
				require.True(t, ok, "%s is saved", name)
				if !slices.Equal(w.Float32s(), got.Float32s()) {
					moved = append(moved, name)
				}
			}
			slices.Sort(moved)
			sameConv := slices.Equal(initial[tc.conv].Float32s(), weights[tc.conv].Float32s())
			assert.Equal(t, tc.frozen, sameConv, "%s is unchanged exactly when the backbone is frozen", tc.conv)
			if tc.frozen {
				assert.Empty(t, moved, "the parameters and buffers that changed although model.freeze [\"*\"] froze the backbone")
			} else {
				assert.Greater(t, len(moved), len(initial)/2, "fine-tuning the whole network changes most of its backbone")
			}

			// Export, then run the file in onnxruntime on three validation
			// images transformed as predict transforms them, against the
			// trained model's logits in Hora.
			exported := filepath.Join(t.TempDir(), tc.name+"_shapes.onnx")
			code, stdout, stderr = runTrain(t, "export", "-run", run, "-o", exported)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			s, err := openSession(runFlags{run: run, which: "best"}, false)
			require.NoError(t, err)
			tr := s.info.Image.transform()
			size := 3 * 64 * 64
			x := make([]float32, len(batch)*size)
			for i, path := range batch {
				img, err := data.DecodeImage(path)
				require.NoError(t, err)
				tr.Eval(img, x[i*size:(i+1)*size])
			}
			dims := []int{len(batch), 3, 64, 64}
			want, err := forwardOnce(s.model, tensor.FromFloat32(x, dims...).To(s.dev))
			require.NoError(t, err)
			require.Equal(t, []int{3, 5}, want.Shape())
			// One image through predict's path gives the same logits'
			// softmax as row 0 of the batch.
			p0, err := s.predict(x[:size])
			require.NoError(t, err)
			start = time.Now()
			outs, errs := interop.RunORT(t, script, []interop.ORTRequest{{Model: exported,
				Inputs: map[string]interop.ORTTensor{"input": interop.ORTInput(tensor.FromFloat32(x, dims...))}, Threads: 2}})
			require.Empty(t, errs[0], "onnxruntime")
			require.Contains(t, outs[0], "output")
			got := outs[0]["output"]
			require.Equal(t, []int{3, 5}, got.Shape())
			wantVals := want.Float32s()
			worst := 0.0
			for i, g := range got.Float64s() {
				worst = max(worst, math.Abs(g-float64(wantVals[i])))
			}
			t.Logf("onnxruntime: %v, largest difference from Hora %.3g", time.Since(start).Round(time.Millisecond), worst)
			assert.LessOrEqual(t, worst, 1e-4, "onnxruntime against Hora: logits %v, expected %v", got.Float64s(), wantVals)
			assert.InDeltaSlice(t, softmaxRow(wantVals[:5]), p0, 1e-5, "predict's probabilities of image 0")

			// predict resizes and crops an image of another size.
			code, stdout, stderr = runTrain(t, "predict", "-run", run, "-top-k", "2", odd)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			var p prediction
			require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(stdout)), &p), stdout)
			assert.Equal(t, odd, p.File)
			assert.Contains(t, shapeClasses, p.Label)
			require.Len(t, p.Top, 2)
			assert.Equal(t, p.Label, p.Top[0].Label)
			assert.Contains(t, shapeClasses, p.Top[1].Label)
			assert.GreaterOrEqual(t, p.Top[0].Probability, p.Top[1].Probability)
			assert.Len(t, p.Probabilities, 5)
		})
	}
}

// softmaxRow returns the softmax of logits.
func softmaxRow(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	out := make([]float64, len(logits))
	sum := 0.0
	for i, v := range logits {
		out[i] = math.Exp(float64(v) - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// TestTrainTransferErrors checks the errors of transfer learning's keys
// on small ONNX files exported from Hora models: model.head on a model
// whose output is no classifier (it ends in a ReLU) names model.head and
// the candidate Gemm nodes; a model.freeze glob that matches no parameter
// names its index and lists the parameters; model.head.classes and
// model.input on a model other than "onnx" are config errors; model.input
// naming no graph input lists the inputs. Each exits with exitInput and
// no panic.
func TestTrainTransferErrors(t *testing.T) {
	dataDir := syntheticFashion(t, 64, 32)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	example := []*tensor.Tensor{tensor.Zeros(1, 1, 28, 28)}
	// A classifier of the data's 10 classes.
	mlp := filepath.Join(dir, "mlp.onnx")
	net, err := models.NewMLP(models.MLPConfig{In: 784, Hidden: []int{8}, Classes: 10, Activation: "relu"}, rng)
	require.NoError(t, err)
	require.NoError(t, onnx.ExportFile(mlp, net, example, onnx.ExportOptions{}))
	// A model whose output is a ReLU's: no classifier to replace.
	relu := filepath.Join(dir, "relu.onnx")
	features := layers.NewSequential(layers.NewFlatten(), layers.NewLinear(784, 16, true, rng), layers.ReLU{})
	require.NoError(t, onnx.ExportFile(relu, features, example, onnx.ExportOptions{}))

	cnn := "../configs/fashion-mnist-cnn.yaml"
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"head without classifier", []string{"-set", "model.name=onnx", "-set", "model.file=" + relu, "-set", "model.head.classes=10"},
			[]string{"model.head", "relu.onnx", "is computed by node", "(Relu)", "Gemm and MatMul nodes with an initializer weight:", "(Gemm, 784→16)"}},
		{"freeze matches nothing", []string{"-set", "model.name=onnx", "-set", "model.file=" + mlp, "-set", `model.freeze=["nothing.*"]`},
			[]string{"model.freeze[0]", `"nothing.*"`, "matches no parameter", "the parameters are: 1.weight, 1.bias, 3.weight, 3.bias"}},
		{"head on a built-in model", []string{"-set", "model.head.classes=5"},
			[]string{"model.head.classes", `model "onnx" only`}},
		{"input on a built-in model", []string{"-set", "model.input=pixels"},
			[]string{"model.input", `model "onnx" only`}},
		{"input that does not exist", []string{"-set", "model.name=onnx", "-set", "model.file=" + mlp, "-set", "model.input=pixels"},
			[]string{"model.input: ", `Input("pixels"): the model has no graph input "pixels"; its inputs: input: float[batch,1,28,28]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-config", cnn, "-set", "data.dir=" + dataDir, "-set", "output.plot=false",
				"-set", "output.progress=false", "-out", t.TempDir()}, c.args...)
			code, stdout, stderr := runTrain(t, args...)
			assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range c.want {
				assert.Contains(t, stderr, w)
			}
			assert.NotContains(t, stderr, "panic")
		})
	}
}

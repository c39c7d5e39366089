package onnx_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/tensor"
)

// attentionExportCases are the attention layers and Transformer models:
// scaled dot-product attention (batched MatMul, Transpose, Softmax), the
// causal mask (a constant holding -∞), the learned positional embeddings
// (Slice of a parameter) and the patch embedding (rank-6 Reshape and
// Transpose).
func attentionExportCases() []exportCase {
	return []exportCase{
		{name: "MultiHeadAttention", shape: []int{2, 5, 8}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewMultiHeadAttention(8, 2, layers.AttentionConfig{Dropout: 0.1}, rng)
		}},
		{name: "MultiHeadAttention-causal-nobias", shape: []int{2, 5, 8}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewMultiHeadAttention(8, 4, layers.AttentionConfig{Causal: true, NoBias: true}, rng)
		}},
		{name: "TransformerEncoderLayer", ulps: true, shape: []int{2, 6, 8}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewTransformerEncoderLayer(8, 2, layers.EncoderLayerConfig{FF: 16}, rng)
		}},
		{name: "TransformerEncoderLayer-prenorm-gelu-causal", ulps: true, shape: []int{2, 6, 8}, model: func(rng *rand.Rand) layers.Layer {
			return layers.NewTransformerEncoderLayer(8, 2, layers.EncoderLayerConfig{FF: 16, NormFirst: true, Activation: "gelu", Causal: true}, rng)
		}},
		{name: "TransformerClassifier", ulps: true, shape: []int{2, 1, 8, 8}, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewTransformerClassifier(models.TransformerClassifierConfig{
				InFeatures: 16, SeqLen: 4, Dim: 8, Heads: 2, Layers: 2, FF: 16, Classes: 3, PatchSize: 4, Dropout: 0.1}, rng))
		}},
		{name: "CharLM", ulps: true, shape: []int{2, 7}, intMax: 9, model: func(rng *rand.Rand) layers.Layer {
			return exportMust(models.NewCharLM(models.CharLMConfig{Vocab: 9, Context: 8, Dim: 8, Heads: 2, Layers: 2, FF: 16, Dropout: 0.1}, rng))
		}},
	}
}

// TestExportAttentionReimport runs the exported attention models in
// Hora's interpreter at the example's batch size and another one.
func TestExportAttentionReimport(t *testing.T) {
	t.Parallel()
	for _, c := range attentionExportCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, rng := c.build(t)
			im, err := onnx.Import(bytes.NewReader(exportBytes(t, m, c.input(rng, c.shape[0]))))
			require.NoError(t, err)
			for _, n := range []int{c.shape[0], 5} {
				x := c.input(rng, n)
				outs, err := im.Run(autograd.Constant(x))
				require.NoError(t, err, "batch %d", n)
				require.Len(t, outs, 1)
				tol := 0.0
				if c.ulps {
					tol = 1e-5
				}
				exportClose(t, horaForward(m, x), outs[0].Value, tol, tol, fmt.Sprintf("Hora interpreter, batch %d", n))
			}
		})
	}
}

// TestExportAttentionORT runs the exported attention models in
// onnxruntime (skipped when it is not installed).
func TestExportAttentionORT(t *testing.T) {
	script := ortRunner(t)
	dir := t.TempDir()
	type check struct {
		name string
		n    int
		want *tensor.Tensor
	}
	var runs []ortRequest
	var checks []check
	for _, c := range attentionExportCases() {
		m, rng := c.build(t)
		path := filepath.Join(dir, c.name+".onnx")
		require.NoError(t, onnx.ExportFile(path, m, []*tensor.Tensor{c.input(rng, c.shape[0])}), c.name)
		for _, n := range []int{c.shape[0], 3} {
			x := c.input(rng, n)
			runs = append(runs, ortRequest{Model: path, Inputs: map[string]ortTensor{"input": ortInput(x)}, Threads: 1})
			checks = append(checks, check{c.name, n, horaForward(m, x)})
		}
	}
	outs, errs := ortRunAll(t, script, runs)
	for i, c := range checks {
		t.Run(fmt.Sprintf("%s/batch%d", c.name, c.n), func(t *testing.T) {
			require.Empty(t, errs[i], "onnxruntime")
			require.Contains(t, outs[i], "output")
			got := outs[i]["output"]
			require.Equal(t, c.want.Shape(), got.Shape())
			exportClose(t, c.want, got, 1e-5, 1e-6, "onnxruntime")
		})
	}
}

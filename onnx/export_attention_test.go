package onnx_test

import (
	"math/rand/v2"

	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
)

// attentionExportCases (exported, re-imported and run in onnxruntime by
// TestExportReimport and TestExportORT) are the attention layers and Transformer models:
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

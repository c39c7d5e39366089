package train

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/models"
	"github.com/hora-dl/hora/tensor"
)

// NewModel builds a language model for a vocabulary size: the model a
// run on a text with that many characters builds, weight for weight.
func TestNewModelCharLM(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "corpus.txt")
	require.NoError(t, os.WriteFile(file, []byte(strings.Repeat("the cat sat on the mat; the dog did not. ", 4)), 0o644))
	cfg, err := LoadConfig("../configs/fortunes-charlm.yaml", []string{"data.files=[" + file + "]",
		"model.dim=16", "model.layers=1", "model.heads=2", "model.ff=32", "model.context=8"})
	require.NoError(t, err)
	ds, err := loadText(cfg, "")
	require.NoError(t, err)
	want, err := buildModel(cfg, ds.modelInput(cfg, rand.New(rand.NewPCG(cfg.Seed, 1))), ds.lm)
	require.NoError(t, err)

	got, err := NewModel(cfg, []int{8}, ds.lm.vocab.Size())
	require.NoError(t, err)
	lm, ok := got.(*models.CharLM)
	require.True(t, ok, "%T", got)
	assert.Equal(t, ds.lm.vocab.Size(), lm.Config().Vocab)
	assert.Equal(t, 8, lm.Config().Context)
	wantSD, gotSD := layers.StateDict(want), layers.StateDict(got)
	require.Equal(t, len(wantSD), len(gotSD))
	for name, w := range wantSD {
		require.Contains(t, gotSD, name)
		assert.True(t, tensor.AllClose(gotSD[name], w, 0, 0), name)
	}

	for _, shape := range [][]int{nil, {9}, {0}, {1, 8}} {
		_, err := NewModel(cfg, shape, 20)
		assert.ErrorContains(t, err, "model charlm: expected samples of [T] token ids", "%v", shape)
	}
}

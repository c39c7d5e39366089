package train

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device/cpu"
)

// TestResumesARunWrittenBeforeTheLibrary resumes a run folder written by
// the train command before it became package train (commit a543465: an
// MLP on 640 Fashion-MNIST samples with dropout, killed at step 28 of 40
// after its checkpoint of step 25) and requires the final weights to be
// bit-identical to those of the same run left uninterrupted by that
// older binary (testdata/run-before-library-final.safetensors).
func TestResumesARunWrittenBeforeTheLibrary(t *testing.T) {
	if _, err := os.Stat(filepath.Join(DefaultDataDir, "train-labels-idx1-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST not installed: %v", err)
	}
	// The reference weights come from Hora's kernel; a BLAS library
	// (chosen by HORA_GEMM, or measured faster on this machine for some of
	// the MLP's products) rounds differently.
	for _, s := range []struct {
		transA, transB bool
		m, n, k        int
	}{{false, true, 64, 256, 784}, {false, true, 64, 10, 256}, {true, false, 784, 256, 64}} {
		if got := cpu.Default().Float32GEMM(s.transA, s.transB, s.m, s.n, s.k); got != "hora" {
			t.Skipf("float32 products of %v run on %s (%s), not the kernel the reference weights come from", s, got, cpu.Default().Backend())
		}
	}
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/run-before-library")))
	code, stdout, stderr := runTrain(t, "resume", "-run", dir, "-q")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "resuming from "+filepath.Join(dir, "checkpoints", "step-00000025"))
	want, err := os.ReadFile("testdata/run-before-library-final.safetensors")
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, modelFile))
	require.NoError(t, err)
	assert.True(t, string(want) == string(got), "the final weights differ from the uninterrupted run's")
}

package onnx_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/onnx/onnxtest"
)

// TestLoadFilesWrittenBefore loads and runs the models of testdata/wire,
// written by Hora, PyTorch and the onnx Python package with onnxpb's
// schema in the proto package onnx (onnxpb's tests check that they
// serialize again to the same bytes), and compares their outputs with the
// ones saved beside them.
func TestLoadFilesWrittenBefore(t *testing.T) {
	t.Parallel()
	cases, err := onnxtest.Cases(filepath.Join("testdata", "wire"))
	require.NoError(t, err)
	require.Len(t, cases, 3)
	for _, dir := range cases {
		for _, r := range onnxtest.Check(dir, onnxtest.Tolerance{RTol: 1e-5, ATol: 1e-6}) {
			assert.Equal(t, onnxtest.Pass, r.Status, "%v", r)
		}
	}
}

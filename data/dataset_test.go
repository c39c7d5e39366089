package data

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makeDataset returns n samples of the given shape; value k of sample i is
// i*1000+k and its label is i%classes.
func makeDataset(t testing.TB, n int, shape []int, classes int) *InMemory {
	t.Helper()
	size := product(shape)
	x := make([]float32, n*size)
	y := make([]int64, n)
	for i := range n {
		for k := range size {
			x[i*size+k] = float32(i*1000 + k)
		}
		y[i] = int64(i % classes)
	}
	ds, err := NewInMemory(x, y, shape, classes)
	require.NoError(t, err)
	return ds
}

func TestNewInMemoryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		x       []float32
		y       []int64
		shape   []int
		classes int
		want    string
	}{
		{"empty shape", nil, nil, nil, 2, "empty sample shape"},
		{"zero dimension", nil, nil, []int{2, 0}, 2, "sample shape [2 0] has dimension 1 = 0, expected > 0"},
		{"wrong length", make([]float32, 5), make([]int64, 2), []int{3}, 2, "len(X) = 5, expected 6 (2 labels × 3 values per sample of shape [3])"},
		{"no classes", make([]float32, 3), make([]int64, 1), []int{3}, 0, "Classes = 0, expected > 0"},
		{"label too large", make([]float32, 6), []int64{0, 2}, []int{3}, 2, "label 2 at index 1 is out of range, expected 0..1"},
		{"negative label", make([]float32, 6), []int64{-1, 0}, []int{3}, 2, "label -1 at index 0 is out of range, expected 0..1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds, err := NewInMemory(tt.x, tt.y, tt.shape, tt.classes)
			assert.Nil(t, ds)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestInMemorySample(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 4, []int{2, 3}, 3)
	dst := make([]float32, 6)
	assert.Equal(t, int64(2), ds.Sample(2, dst))
	assert.Equal(t, []float32{2000, 2001, 2002, 2003, 2004, 2005}, dst)
	assert.PanicsWithValue(t, "data: InMemory.Sample: index 4 out of range [0, 4)", func() { ds.Sample(4, dst) })
	assert.PanicsWithValue(t, "data: InMemory.Sample: index -1 out of range [0, 4)", func() { ds.Sample(-1, dst) })
	assert.PanicsWithValue(t, "data: InMemory.Sample: len(dst) = 5, expected 6 for sample shape [2 3]", func() { ds.Sample(0, dst[:5]) })
}

func TestInMemoryNormalize(t *testing.T) {
	t.Parallel()
	ds, err := NewInMemory([]float32{0, 0.5, 1, 0.25}, []int64{0, 1}, []int{2}, 2)
	require.NoError(t, err)
	mean, std := ds.MeanStd()
	assert.InDelta(t, 0.4375, mean, 1e-9)
	assert.InDelta(t, 0.369755, std, 1e-6)
	ds.Normalize(0.5, 0.25)
	assert.InDeltaSlice(t, []float32{-2, 0, 2, -1}, ds.X, 1e-6)
	assert.Panics(t, func() { ds.Normalize(0, 0) })

	empty := &InMemory{Shape: []int{1}, Classes: 1}
	mean, std = empty.MeanStd()
	assert.Zero(t, mean)
	assert.Zero(t, std)
}

func TestSubset(t *testing.T) {
	t.Parallel()
	ds := makeDataset(t, 5, []int{2}, 5)
	sub := Subset(ds, []int{4, 0, 4})
	require.Equal(t, 3, sub.Len())
	assert.Equal(t, []int{2}, sub.SampleShape())
	dst := make([]float32, 2)
	assert.Equal(t, int64(4), sub.Sample(0, dst))
	assert.Equal(t, []float32{4000, 4001}, dst)
	assert.Equal(t, int64(0), sub.Sample(1, dst))
	assert.Equal(t, []float32{0, 1}, dst)
	assert.PanicsWithValue(t, "data: Subset.Sample: index 3 out of range [0, 3)", func() { sub.Sample(3, dst) })
	assert.PanicsWithValue(t, "data: Subset: indices[1] = 5 out of range [0, 5)", func() { Subset(ds, []int{0, 5}) })

	// The indices are copied.
	idx := []int{1, 2}
	sub = Subset(ds, idx)
	idx[0] = 3
	assert.Equal(t, int64(1), sub.Sample(0, dst))

	// A subset of a subset.
	subsub := Subset(sub, []int{1})
	assert.Equal(t, int64(2), subsub.Sample(0, dst))
}

package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/tensor"
)

func TestReshape(t *testing.T) {
	t.Parallel()
	x := arange(2, 3, 4)
	want := x.Values()
	for _, tc := range []struct {
		shape, got []int
	}{
		{[]int{6, -1}, []int{6, 4}},
		{[]int{-1}, []int{24}},
		{[]int{4, -1, 2}, []int{4, 3, 2}},
		{[]int{24}, []int{24}},
		{[]int{1, 2, 1, 12}, []int{1, 2, 1, 12}},
		{[]int{-1, 1}, []int{24, 1}},
	} {
		r := x.Reshape(tc.shape...)
		assert.Equal(t, tc.got, r.Shape(), "Reshape%v", tc.shape)
		assert.Equal(t, want, r.Values(), "Reshape%v", tc.shape)
		assert.True(t, r.Buffer() == x.Buffer(), "Reshape%v of a contiguous tensor is a view", tc.shape)
	}
	// A scalar and back.
	s := tensor.Scalar(3)
	assert.Equal(t, []int{1}, s.Reshape(-1).Shape())
	assert.Empty(t, s.Reshape(-1).Reshape().Shape())
	assert.Equal(t, 0, s.Reshape(-1).Reshape().Rank())
	assert.Equal(t, 3.0, s.Reshape(1, 1).Item())
	// Empty.
	assert.Equal(t, []int{0, 3}, tensor.Zeros(3, 0).Reshape(-1, 3).Shape())

	// Non-contiguous input: the elements are taken in the view's row-major order.
	xt := x.Transpose(0, 2) // 4×3×2, xt[i,j,k] = x[k,j,i]
	r := xt.Reshape(-1, 6)
	assert.Equal(t, []int{4, 6}, r.Shape())
	var wantT []float64
	forEachIndex([]int{4, 3, 2}, func(idx []int) {
		wantT = append(wantT, want[flat([]int{2, 3, 4}, []int{idx[2], idx[1], idx[0]})])
	})
	assert.Equal(t, wantT, r.Values())
	assert.False(t, r.Buffer() == x.Buffer(), "Reshape of a non-contiguous view must copy")

	assertPanicsWith(t, func() { x.Reshape(5, -1) }, "[2 3 4]", "[5 -1]")
	assertPanicsWith(t, func() { x.Reshape(7) }, "[2 3 4]", "[7]")
	assertPanicsWith(t, func() { x.Reshape(-1, -1) }, "[2 3 4]", "[-1 -1]")
	assertPanicsWith(t, func() { x.Reshape(-2, -12) }, "[2 3 4]")
	assertPanicsWith(t, func() { x.Reshape(0, -1) }, "[2 3 4]", "[0 -1]")
}

func TestFlatten(t *testing.T) {
	t.Parallel()
	x := arange(2, 3, 4, 5)
	assert.Equal(t, []int{2, 60}, x.Flatten(1).Shape())
	assert.Equal(t, []int{2, 3, 20}, x.Flatten(-2).Shape())
	assert.Equal(t, []int{120}, x.Flatten(0).Shape())
	assert.Equal(t, []int{2, 3, 4, 5}, x.Flatten(3).Shape())
	assert.Equal(t, x.Values(), x.Flatten(1).Values())
	// Non-contiguous input.
	p := x.Permute(1, 0, 2, 3)
	assert.Equal(t, p.Values(), p.Flatten(1).Values())
	assert.Equal(t, []int{3, 40}, p.Flatten(1).Shape())
	assertPanicsWith(t, func() { x.Flatten(4) }, "[2 3 4 5]")
}

func TestPermuteTranspose(t *testing.T) {
	t.Parallel()
	x := arange(2, 3, 4)
	xv := x.Values()
	p := x.Permute(2, 0, 1)
	require.Equal(t, []int{4, 2, 3}, p.Shape())
	assert.Equal(t, []int{1, 12, 4}, p.Strides())
	assert.True(t, p.Buffer() == x.Buffer(), "Permute is a view")
	assert.False(t, p.IsContiguous())
	var want []float64
	forEachIndex([]int{4, 2, 3}, func(i []int) { want = append(want, xv[flat([]int{2, 3, 4}, []int{i[1], i[2], i[0]})]) })
	assert.Equal(t, want, p.Values())
	assert.Equal(t, x.Values(), p.Permute(1, 2, 0).Values(), "inverse permutation")
	assert.Equal(t, p.Values(), x.Permute(-1, 0, -2).Values(), "negative axes")

	tr := x.Transpose(0, 2)
	assert.Equal(t, []int{4, 3, 2}, tr.Shape())
	assert.Equal(t, x.Permute(2, 1, 0).Values(), tr.Values())
	assert.Equal(t, x.Permute(0, 2, 1).Values(), x.T().Values())
	assert.Equal(t, x.Values(), x.Transpose(1, 1).Values())

	m := arange(2, 3)
	assertValues(t, m.T(), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	assertValues(t, m.Transpose(-1, -2), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)

	assertPanicsWith(t, func() { x.Permute(0, 1) }, "[0 1]", "[2 3 4]")
	assertPanicsWith(t, func() { x.Permute(0, 1, 1) }, "[0 1 1]", "[2 3 4]")
	assertPanicsWith(t, func() { x.Permute(0, 1, 3) }, "[2 3 4]")
	assertPanicsWith(t, func() { x.Transpose(0, 3) }, "[2 3 4]")
	assertPanicsWith(t, func() { arange(3).T() }, "[3]")
}

func TestSliceIndex(t *testing.T) {
	t.Parallel()
	x := arange(3, 4)
	s := x.Slice(1, 1, 3)
	assertValues(t, s, []int{3, 2}, []float64{1, 2, 5, 6, 9, 10}, 0)
	assert.True(t, s.Buffer() == x.Buffer(), "Slice is a view")
	assertValues(t, x.Slice(0, 1, 3), []int{2, 4}, []float64{4, 5, 6, 7, 8, 9, 10, 11}, 0)
	assertValues(t, x.Slice(-1, 3, 4), []int{3, 1}, []float64{3, 7, 11}, 0)
	assert.Equal(t, []int{3, 0}, x.Slice(1, 2, 2).Shape())
	assertValues(t, x.Slice(0, 1, 3).Slice(1, 1, 3), []int{2, 2}, []float64{5, 6, 9, 10}, 0)

	assertValues(t, x.Index(0, 2), []int{4}, []float64{8, 9, 10, 11}, 0)
	assertValues(t, x.Index(1, 1), []int{3}, []float64{1, 5, 9}, 0)
	assertValues(t, x.Index(-1, 3), []int{3}, []float64{3, 7, 11}, 0)
	assert.Equal(t, 6.0, x.Index(0, 1).Index(0, 2).Item())
	assert.True(t, x.Index(0, 1).Buffer() == x.Buffer(), "Index is a view")

	assertPanicsWith(t, func() { x.Slice(1, 2, 5) }, "[3 4]")
	assertPanicsWith(t, func() { x.Slice(0, -1, 2) }, "[3 4]")
	assertPanicsWith(t, func() { x.Slice(0, 2, 1) }, "[3 4]")
	assertPanicsWith(t, func() { x.Slice(2, 0, 1) }, "[3 4]")
	assertPanicsWith(t, func() { x.Index(0, 3) }, "[3 4]")
}

func TestSqueezeUnsqueeze(t *testing.T) {
	t.Parallel()
	x := arange(3, 1, 4)
	s := x.Squeeze(1)
	assertValues(t, s, []int{3, 4}, x.Values(), 0)
	assert.True(t, s.Buffer() == x.Buffer())
	assert.True(t, s.IsContiguous())
	assert.Equal(t, []int{3, 4}, x.Squeeze(-2).Shape())
	assertPanicsWith(t, func() { x.Squeeze(0) }, "[3 1 4]")

	for _, tc := range []struct {
		axis  int
		shape []int
	}{
		{0, []int{1, 3, 1, 4}}, {1, []int{3, 1, 1, 4}}, {3, []int{3, 1, 4, 1}}, {-1, []int{3, 1, 4, 1}}, {-4, []int{1, 3, 1, 4}},
	} {
		u := x.Unsqueeze(tc.axis)
		assert.Equal(t, tc.shape, u.Shape(), "Unsqueeze(%d)", tc.axis)
		assert.Equal(t, x.Values(), u.Values())
		assert.True(t, u.IsContiguous(), "Unsqueeze(%d) of a contiguous tensor", tc.axis)
		assert.True(t, u.Buffer() == x.Buffer())
	}
	// On a transposed view the values follow the view.
	m := arange(2, 3).T()
	assertValues(t, m.Unsqueeze(1), []int{3, 1, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	assertValues(t, m.Unsqueeze(1).Squeeze(1), []int{3, 2}, []float64{0, 3, 1, 4, 2, 5}, 0)
	assertPanicsWith(t, func() { x.Unsqueeze(4) }, "[3 1 4]")
	assertPanicsWith(t, func() { x.Unsqueeze(-5) }, "[3 1 4]")
	assert.Equal(t, []int{1}, tensor.Scalar(1).Unsqueeze(0).Shape())
}

func TestExpand(t *testing.T) {
	t.Parallel()
	x := arange(3, 1)
	e := x.Expand(2, 3, 4)
	require.Equal(t, []int{2, 3, 4}, e.Shape())
	assert.Equal(t, []int{0, 1, 0}, e.Strides())
	assert.True(t, e.Buffer() == x.Buffer(), "Expand is a view")
	var want []float64
	forEachIndex([]int{2, 3, 4}, func(i []int) { want = append(want, float64(i[1])) })
	assert.Equal(t, want, e.Values())
	assert.Equal(t, []int{3, 1}, x.Expand(3, 1).Shape())
	assertValues(t, tensor.Scalar(2).Expand(2, 2), []int{2, 2}, []float64{2, 2, 2, 2}, 0)
	// Expand a slice (offset view).
	assertValues(t, arange(2, 3).Slice(0, 1, 2).Expand(2, 3), []int{2, 3}, []float64{3, 4, 5, 3, 4, 5}, 0)

	assertPanicsWith(t, func() { x.Expand(4, 4) }, "[3 1]", "[4 4]")
	assertPanicsWith(t, func() { x.Expand(3) }, "[3 1]", "[3]")
	assertPanicsWith(t, func() { arange(2, 3).Expand(2, 6) }, "[2 3]", "[2 6]")
}

func TestBroadcastShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b, want []int
		ok         bool
	}{
		{[]int{2, 3}, []int{3}, []int{2, 3}, true},
		{[]int{2, 1}, []int{1, 3}, []int{2, 3}, true},
		{[]int{}, []int{4, 5}, []int{4, 5}, true},
		{[]int{5, 1, 3}, []int{4, 1}, []int{5, 4, 3}, true},
		{[]int{0, 1}, []int{1, 3}, []int{0, 3}, true},
		{[]int{1}, []int{0}, []int{0}, true},
		{[]int{2, 3}, []int{2}, nil, false},
		{[]int{2, 3}, []int{3, 3}, nil, false},
	} {
		got, ok := tensor.BroadcastShapes(tc.a, tc.b)
		assert.Equal(t, tc.ok, ok, "%v %v", tc.a, tc.b)
		if tc.ok {
			assert.Equal(t, tc.want, got, "%v %v", tc.a, tc.b)
			got2, _ := tensor.BroadcastShapes(tc.b, tc.a)
			assert.Equal(t, tc.want, got2, "%v %v (swapped)", tc.b, tc.a)
		}
	}
}

// TestViewAliasing checks that writes through views reach the shared
// buffer and that copies share nothing.
func TestViewAliasing(t *testing.T) {
	t.Parallel()
	x := tensor.Zeros(3, 4)
	x.Slice(1, 1, 3).Fill(1)
	x.Index(0, 2).Fill(2)
	x.T().Slice(0, 0, 1).Fill(5) // column 0
	assertValues(t, x, []int{3, 4}, []float64{
		5, 1, 1, 0,
		5, 1, 1, 0,
		5, 2, 2, 2,
	}, 0)
	x.Reshape(12).Slice(0, 3, 4).Fill(9)
	assert.Equal(t, 9.0, x.Values()[3])
	x.Unsqueeze(0).Squeeze(0).Permute(1, 0).Index(0, 3).CopyFrom(tensor.FromFloat32([]float32{7, 8, 9}))
	assertValues(t, x.Slice(1, 3, 4), []int{3, 1}, []float64{7, 8, 9}, 0)

	c := x.Clone()
	c.Fill(-1)
	assert.NotContains(t, x.Values(), -1.0, "Clone shares memory")
	assert.True(t, c.IsContiguous())
	assert.True(t, x.Contiguous() == x, "Contiguous of a contiguous tensor returns it")
	xt := x.T()
	ct := xt.Contiguous()
	assert.False(t, ct == xt)
	assert.True(t, ct.IsContiguous())
	assert.Equal(t, xt.Values(), ct.Values())

	// Slices split by Split alias their source.
	parts := x.Split(0, 1, 2)
	parts[1].Fill(4)
	assertValues(t, x.Slice(0, 1, 3), []int{2, 4}, []float64{4, 4, 4, 4, 4, 4, 4, 4}, 0)
}

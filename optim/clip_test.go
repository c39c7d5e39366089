package optim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

func TestClipGradNormCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		grads     [][]float32 // nil: no gradient
		maxNorm   float64
		wantNorm  float64 // NaN: expect NaN
		wantGrads [][]float32
	}{
		{"clipped", [][]float32{{3, 0}, {0, 4}}, 1, 5,
			[][]float32{{float32(3 * (1 / (5 + 1e-6))), 0}, {0, float32(4 * (1 / (5 + 1e-6)))}}},
		{"not clipped", [][]float32{{0.3}, {0.4}}, 1, 0.5, [][]float32{{0.3}, {0.4}}},
		{"nil grad ignored", [][]float32{{3, 4}, nil}, 10, 5, [][]float32{{3, 4}, nil}},
		{"no grads", [][]float32{nil, nil}, 1, 0, [][]float32{nil, nil}},
		{"max norm 0", [][]float32{{3, 4}}, 0, 5, [][]float32{{0, 0}}},
		{"nan left alone", [][]float32{{float32(math.NaN()), 100}, {50}}, 1, math.NaN(),
			[][]float32{{float32(math.NaN()), 100}, {50}}},
		{"inf left alone", [][]float32{{float32(math.Inf(-1)), 100}}, 1, math.Inf(1),
			[][]float32{{float32(math.Inf(-1)), 100}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ps := make([]*autograd.Param, len(c.grads))
			for i, g := range c.grads {
				ps[i] = autograd.NewParam("p", tensor.Zeros(max(len(g), 1)))
				if g != nil {
					ps[i].Grad = tensor.FromFloat32(g, len(g))
				}
			}
			got := ClipGradNorm(ps, c.maxNorm)
			if math.IsNaN(c.wantNorm) {
				assert.True(t, math.IsNaN(got), "norm %v", got)
			} else {
				assert.InDelta(t, c.wantNorm, got, 1e-6)
			}
			for i, p := range ps {
				if c.wantGrads[i] == nil {
					assert.Nil(t, p.Grad)
					continue
				}
				g := p.Grad.Float32s()
				for j, w := range c.wantGrads[i] {
					if math.IsNaN(float64(w)) {
						assert.True(t, math.IsNaN(float64(g[j])))
					} else {
						assert.InDelta(t, w, g[j], 1e-7, "grad %d[%d]", i, j)
					}
				}
			}
		})
	}
}

func TestClipGradNormPanics(t *testing.T) {
	t.Parallel()
	ps := []*autograd.Param{autograd.NewParam("p", tensor.Zeros(1))}
	assert.Panics(t, func() { ClipGradNorm(ps, -1) })
	assert.Panics(t, func() { ClipGradNorm(ps, math.NaN()) })
}

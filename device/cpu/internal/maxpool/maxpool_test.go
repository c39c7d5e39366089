package maxpool

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reference pools one window the way the general max-pooling loop does:
// the first maximum in row-major order wins, the first NaN beats any
// number (the value is then some NaN), and of a -0 and a +0 the value is
// +0 (Go's max) at the first position equal to it.
func reference(a, b, c, d float32, w int64) (float32, int64) {
	vals := []float32{a, b, c, d}
	offs := []int64{0, 1, w, w + 1}
	for i, v := range vals {
		if v != v {
			return v, offs[i]
		}
	}
	m := vals[0]
	for _, v := range vals[1:] {
		if v > m || (v == 0 && m == 0 && !math.Signbit(float64(v))) {
			m = v
		}
	}
	for i, v := range vals {
		if v == m {
			return m, offs[i]
		}
	}
	panic("unreachable")
}

// randRow fills a row with values drawn from a few (ties), zeros of both
// signs, and with probability nan a NaN.
func randRow(rng *rand.Rand, n int, nan float64) []float32 {
	pool := []float32{-2, -1, float32(math.Copysign(0, -1)), 0, 0.5, 1, 3, float32(math.Inf(1)), float32(math.Inf(-1))}
	r := make([]float32, n)
	for i := range r {
		switch {
		case rng.Float64() < nan:
			r[i] = float32(math.NaN())
		case rng.IntN(2) == 0:
			r[i] = pool[rng.IntN(len(pool))]
		default:
			r[i] = rng.Float32()*4 - 2
		}
	}
	return r
}

// TestPlane2x2 checks Plane2x2 (assembly where the CPU has it) against
// the reference on every window, numbers bit for bit, on planes whose rows
// end inside, at and after a 16-window step, odd widths and heights (the
// last column or row left out), with and without NaNs.
func TestPlane2x2(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range [][2]int{{0, 0}, {1, 1}, {3, 7}, {2, 14}, {5, 15}, {2, 16}, {3, 17}, {2, 33}, {4, 50}} {
		for _, extra := range []int{0, 1} { // odd input width and height
			for _, nan := range []float64{0, 0.01, 0.3} {
				oh, ow := shape[0], shape[1]
				h, w := 2*oh+extra, 2*ow+extra
				t.Run(fmt.Sprintf("%dx%d/odd%d/nan%v", oh, ow, extra, nan), func(t *testing.T) {
					x := randRow(rng, h*w, nan)
					y := make([]float32, oh*ow+1)
					arg := make([]int64, oh*ow+1)
					y[oh*ow], arg[oh*ow] = 42, 42 // beyond the plane: untouched
					Plane2x2(y[:oh*ow], arg[:oh*ow], x, oh, ow, w)
					for i := range oh {
						for j := range ow {
							p := 2*i*w + 2*j
							a, b, c, d := x[p], x[p+1], x[p+w], x[p+w+1]
							m, k := reference(a, b, c, d, int64(w))
							got := y[i*ow+j]
							if m != m { // any NaN: Go's max does not keep the payload
								require.True(t, got != got, "window (%d, %d): got %v, want NaN", i, j, got)
							} else {
								require.Equal(t, math.Float32bits(m), math.Float32bits(got), "window (%d, %d): %v %v %v %v", i, j, a, b, c, d)
							}
							require.Equal(t, int64(p)+k, arg[i*ow+j], "window (%d, %d): %v %v %v %v", i, j, a, b, c, d)
						}
					}
					assert.Equal(t, float32(42), y[oh*ow])
					assert.Equal(t, int64(42), arg[oh*ow])
				})
			}
		}
	}
}

// TestPlane2x2MatchesGo: the assembly and Go give the same bits, on a
// large plane with every kind of value.
func TestPlane2x2MatchesGo(t *testing.T) {
	if !haveAsm {
		t.Skip("no assembly on this CPU or build")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const oh, ow, w = 37, 45, 91
	x := randRow(rng, 2*oh*w, 0.001)
	y, arg := make([]float32, oh*ow), make([]int64, oh*ow)
	yg, argg := make([]float32, oh*ow), make([]int64, oh*ow)
	Plane2x2(y, arg, x, oh, ow, w)
	for i := range oh {
		row := i * ow
		row2x2Go(yg[row:row+ow], argg[row:row+ow], x[2*i*w:], x[(2*i+1)*w:], int64(2*i*w), w)
	}
	for q := range y {
		require.Equal(t, math.Float32bits(yg[q]), math.Float32bits(y[q]), "window %d", q)
	}
	assert.Equal(t, argg, arg)
}

// TestPlane2x2ShortBuffers: buffers too short for the plane panic with
// the sizes.
func TestPlane2x2ShortBuffers(t *testing.T) {
	assert.PanicsWithValue(t, "maxpool: Plane2x2 of 2×3 windows over rows of 6 got 6 outputs, 6 positions and 23 inputs", func() {
		Plane2x2(make([]float32, 6), make([]int64, 6), make([]float32, 23), 2, 3, 6)
	})
	assert.Panics(t, func() { Plane2x2(make([]float32, 6), make([]int64, 6), make([]float32, 24), 2, 4, 6) }, "ow > w/2")
}

// BenchmarkPlane2x2 pools the small CNN's planes (28×28 and 14×14), in Go
// row by row and with Plane2x2.
func BenchmarkPlane2x2(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, w := range []int{28, 14} {
		x := randRow(rng, w*w, 0)
		n := w / 2
		y, arg := make([]float32, n*n), make([]int64, n*n)
		for _, impl := range []string{"go", "Plane2x2"} {
			b.Run(fmt.Sprintf("%d/%s", w, impl), func(b *testing.B) {
				for b.Loop() {
					if impl == "Plane2x2" {
						Plane2x2(y, arg, x, n, n, w)
						continue
					}
					for i := range n {
						row2x2Go(y[i*n:(i+1)*n], arg[i*n:(i+1)*n], x[2*i*w:], x[(2*i+1)*w:], int64(2*i*w), int64(w))
					}
				}
				b.ReportMetric(float64(n*n*b.N)/b.Elapsed().Seconds()/1e9, "Gwindows/s")
			})
		}
	}
}

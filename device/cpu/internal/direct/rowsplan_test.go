package direct

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowsPlanMatchesBlock checks RowsPlan.BlockRange (the blocks in two
// ranges) against Block into a scratch block whose outputs are then
// placed, with the bias and clamp, by their row and column: the same bits
// at every output, and every other element of the planes (and the gap
// between them) left as it was.
func TestRowsPlanMatchesBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	inf := float32(math.Inf(1))
	for _, g := range []struct{ oh, ow, wq int }{
		{112, 112, 115}, // resnet18's stem
		{5, 16, 16},     // rows a whole number of vectors
		{7, 17, 20},
		{3, 1, 16},
		{9, 30, 47}, // a vector inside a row
		{1, 40, 40}, // one row, the block past its end
	} {
		p := NewRowsPlan(g.oh, g.ow, g.wq)
		channels, taps := 3, []int{0, 1, g.wq, g.wq + 2}
		cstride := p.Blocks()*Cols + g.wq + 2
		in := make([]float32, channels*cstride)
		for i := range in {
			in[i] = r.Float32()*4 - 2
		}
		in[5] = float32(math.NaN())
		w := make([]float32, channels*len(taps)*Rows)
		for i := range w {
			w[i] = r.Float32()*2 - 1
		}
		bias := make([]float32, Rows)
		for i := range bias {
			bias[i] = r.Float32() - 0.5
		}
		plane := g.oh * g.ow
		ldo := plane + 3
		const untouched = 12345
		for _, c := range []struct {
			bias   []float32
			lo, hi float32
		}{{nil, -inf, inf}, {bias, 0, inf}, {bias, 0, 0.5}} {
			got, want := make([]float32, (Rows-1)*ldo+plane), make([]float32, (Rows-1)*ldo+plane)
			for i := range got {
				got[i], want[i] = untouched, untouched
			}
			half := p.Blocks() / 2
			p.BlockRange(got, ldo, in, cstride, taps, w, channels, 0, half, c.bias, c.lo, c.hi)
			p.BlockRange(got, ldo, in, cstride, taps, w, channels, half, p.Blocks(), c.bias, c.lo, c.hi)
			scratch := make([]float32, Rows*Cols)
			for b := range p.Blocks() {
				Block(scratch, Cols, in[b*Cols:], cstride, taps, w, channels)
				for row := range Rows {
					for k := range Cols {
						q := b*Cols + k
						i, j := q/g.wq, q%g.wq
						if i >= g.oh || j >= g.ow {
							continue
						}
						v := scratch[row*Cols+k]
						if c.bias != nil {
							v = min(max(v+c.bias[row], c.lo), c.hi)
						}
						want[row*ldo+i*g.ow+j] = v
					}
				}
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v bias %v clamp [%v, %v]: out[%d] = %v, want %v", g, c.bias != nil, c.lo, c.hi, i, got[i], want[i])
				}
			}
		}
	}
}

// TestRowsPlanChecks requires bad geometries and short slices to panic.
func TestRowsPlanChecks(t *testing.T) {
	p := NewRowsPlan(2, 20, 20)
	taps := []int{0, 1}
	in := make([]float32, p.Blocks()*Cols+1)
	w := make([]float32, len(taps)*Rows)
	out := make([]float32, (Rows-1)*40+40)
	p.BlockRange(out, 40, in, 0, taps, w, 1, 0, 1, nil, 0, 0) // fits
	p.BlockRange(out, 40, in, 0, taps, w, 1, 1, 1, nil, 0, 0) // no blocks
	for name, f := range map[string]func(){
		"narrow rows": func() { NewRowsPlan(2, 10, 10) },
		"wide output": func() { NewRowsPlan(2, 21, 20) },
		"block":       func() { p.BlockRange(out, 40, in, 0, taps, w, 1, 1, 2, nil, 0, 0) },
		"range":       func() { p.BlockRange(out, 40, in, 0, taps, w, 1, 1, 0, nil, 0, 0) },
		"output":      func() { p.BlockRange(out[:len(out)-1], 40, in, 0, taps, w, 1, 0, 1, nil, 0, 0) },
		"input":       func() { p.BlockRange(out, 40, in[:p.Blocks()*Cols], 0, taps, w, 1, 0, 1, nil, 0, 0) },
		"weights":     func() { p.BlockRange(out, 40, in, 0, taps, w[:len(w)-1], 1, 0, 1, nil, 0, 0) },
		"bias":        func() { p.BlockRange(out, 40, in, 0, taps, w, 1, 0, 1, make([]float32, Rows-1), 0, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

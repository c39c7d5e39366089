package direct

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var clamps = [][2]float32{{float32(math.Inf(-1)), float32(math.Inf(1))}, {0, float32(math.Inf(1))}, {0, 6}}

// checkOutput compares got with the float64 sum want (mag: the sum of the
// products' magnitudes), clamped; hasNaN says an input read was NaN.
func checkOutput(t *testing.T, what string, got float32, want, mag float64, hasNaN bool, bias float32, clamp [2]float32) {
	t.Helper()
	want = min(max(want+float64(bias), float64(clamp[0])), float64(clamp[1]))
	if hasNaN {
		if !math.IsNaN(float64(got)) {
			t.Fatalf("%s = %g, want NaN", what, got)
		}
		return
	}
	if math.Abs(float64(got)-want) > 1e-6*mag+1e-6 {
		t.Fatalf("%s = %g, want %g", what, got, want)
	}
}

// sameGeometry is a plane and kernel of a SamePlan (NewSamePlan's
// arguments).
type sameGeometry struct{ h, w, oh, kh, kw, padH, padW, dilH, dilW int }

// tapInput returns the index in the plane of the input that tap (kh, kw)
// of output q reads, and whether it lies inside the image.
func (g sameGeometry) tapInput(kh, kw, q int) (int, bool) {
	ih, iw := q/g.w+kh*g.dilH-g.padH, q%g.w+kw*g.dilW-g.padW
	return ih*g.w + iw, ih >= 0 && ih < g.h && iw >= 0 && iw < g.w
}

// sameGeometries are the planes the SamePlan tests run on: MobileNet's,
// outputs that end inside and at the end of a step, one output, wider
// kernels, padding, dilation, fewer output rows than input rows, and a
// kernel of 81 taps.
var sameGeometries = []sameGeometry{
	{112, 112, 112, 3, 3, 1, 1, 1, 1},
	{14, 14, 14, 3, 3, 1, 1, 1, 1},
	{7, 7, 7, 3, 3, 1, 1, 1, 1},
	{8, 8, 8, 3, 3, 1, 1, 1, 1}, // 64 outputs: one whole step
	{1, 1, 1, 3, 3, 1, 1, 1, 1},
	{5, 3, 5, 3, 3, 1, 1, 1, 1},
	{9, 9, 9, 5, 5, 2, 2, 1, 1},
	{8, 8, 6, 3, 3, 0, 1, 1, 1},
	{10, 10, 10, 3, 3, 2, 2, 2, 2},
	{6, 1, 6, 3, 1, 1, 0, 1, 1},
	{3, 17, 3, 1, 3, 0, 1, 1, 1},
	{9, 9, 9, 9, 9, 4, 4, 1, 1},
}

// TestSamePlanMatchesReference checks SamePlan.Run, in assembly where the
// CPU has it and in Go, against the convolution's float64 sum over the
// taps inside the image, on planes whose outputs end inside and at the
// end of a step, with padding, dilation and fewer output rows than input
// rows; and that nothing past the outputs is written.
func TestSamePlanMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		in := make([]float32, g.h*g.w)
		for i := range in {
			in[i] = (r.Float32()*2 - 1) * 8
		}
		if len(in) > 4 {
			in[4] = float32(math.NaN())
		}
		w := make([]float32, g.kh*g.kw)
		for i := range w {
			w[i] = r.Float32()*2 - 1
		}
		n := g.oh * g.w
		for _, goOnly := range []bool{false, true} {
			for _, c := range clamps {
				out := make([]float32, n+20)
				for i := range out {
					out[i] = 1234
				}
				if goOnly {
					p.runGo(out[:n], in, w, 0.5, c[0], c[1])
				} else {
					p.Run(out[:n], in, w, 0.5, c[0], c[1])
				}
				for i := 0; i < g.oh; i++ {
					for j := 0; j < g.w; j++ {
						var want, mag float64
						hasNaN := false
						for kh := range g.kh {
							for kw := range g.kw {
								ih, iw := i+kh*g.dilH-g.padH, j+kw*g.dilW-g.padW
								if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
									continue
								}
								x := in[ih*g.w+iw]
								hasNaN = hasNaN || math.IsNaN(float64(x))
								prod := float64(w[kh*g.kw+kw]) * float64(x)
								want += prod
								mag += math.Abs(prod)
							}
						}
						checkOutput(t, "out", out[i*g.w+j], want, mag, hasNaN, 0.5, c)
					}
				}
				for i := n; i < len(out); i++ {
					if out[i] != 1234 {
						t.Fatalf("%+v (Go %v): out[%d] past the %d outputs written", g, goOnly, i, n)
					}
				}
			}
		}
	}
}

// TestSamePlanTapDots checks SamePlan.TapDots against the float64 sums
// of the weight gradient it defines, on the geometries of
// TestSamePlanMatchesReference's kind, and that it adds to its partial
// sums.
func TestSamePlanTapDots(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		in := make([]float32, g.h*g.w)
		for i := range in {
			in[i] = r.Float32()*2 - 1
		}
		dy := make([]float32, g.oh*g.w)
		for i := range dy {
			dy[i] = r.Float32()*2 - 1
		}
		acc := make([]float64, TapAcc*g.kh*g.kw)
		for i := range acc {
			acc[i] = 0.125
		}
		p.TapDots(acc, dy, in)
		sums := make([]float64, g.kh*g.kw)
		TapSums(sums, acc)
		for kh := range g.kh {
			for kw := range g.kw {
				var want, mag float64
				for i := range g.oh {
					for j := range g.w {
						ih, iw := i+kh*g.dilH-g.padH, j+kw*g.dilW-g.padW
						if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
							continue
						}
						prod := float64(dy[i*g.w+j]) * float64(in[ih*g.w+iw])
						want += prod
						mag += math.Abs(prod)
					}
				}
				if got := sums[kh*g.kw+kw] - 1; math.Abs(got-want) > 1e-5*mag+1e-6 {
					t.Fatalf("%+v: tap (%d, %d) = %g, want %g", g, kh, kw, got, want)
				}
			}
		}
	}
}

// TestStride2PlanMatchesReference checks Stride2Plan.Run against its
// float64 sum over the columns inside the row, for rows that end inside
// and at the end of a step, with and without padding, zero to three
// kernel rows; and that nothing past the outputs is written.
func TestStride2PlanMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, g := range []struct{ width, pad int }{
		{112, 1}, {56, 1}, {14, 1}, {7, 1}, {8, 0}, {9, 0}, {1, 1}, {33, 1}, {64, 1}, {65, 0}, {2, 1},
	} {
		ow := (g.width+2*g.pad-3)/2 + 1
		if ow < 1 {
			ow = 1
		}
		p := NewStride2Plan(g.width, ow, g.pad)
		for rows := range 4 {
			ld := g.width + 3
			in := make([]float32, max(0, (rows-1)*ld+g.width))
			for i := range in {
				in[i] = (r.Float32()*2 - 1) * 8
			}
			if len(in) > 3 {
				in[3] = float32(math.NaN())
			}
			w := make([]float32, 3*rows)
			for i := range w {
				w[i] = r.Float32()*2 - 1
			}
			for _, c := range clamps {
				out := make([]float32, ow+20)
				for i := range out {
					out[i] = 1234
				}
				p.Run(out[:ow], in, ld, rows, w, -0.25, c[0], c[1])
				for j := range ow {
					var want, mag float64
					hasNaN := false
					for rr := range rows {
						for k := range 3 {
							col := 2*j - g.pad + k
							if col < 0 || col >= g.width {
								continue
							}
							x := in[rr*ld+col]
							hasNaN = hasNaN || math.IsNaN(float64(x))
							prod := float64(w[3*rr+k]) * float64(x)
							want += prod
							mag += math.Abs(prod)
						}
					}
					checkOutput(t, "out", out[j], want, mag, hasNaN, -0.25, c)
				}
				for i := ow; i < len(out); i++ {
					if out[i] != 1234 {
						t.Fatalf("%+v, %d rows: out[%d] past the %d outputs written", g, rows, i, ow)
					}
				}
			}
		}
	}
}

// TestInPlaceChecksLengths requires short slices to panic.
func TestInPlaceChecksLengths(t *testing.T) {
	same := NewSamePlan(4, 4, 4, 3, 3, 1, 1, 1, 1)
	s2 := NewStride2Plan(8, 4, 1)
	in, out, w := make([]float32, 16), make([]float32, 16), make([]float32, 9)
	for name, f := range map[string]func(){
		"same input":     func() { same.Run(out, in[:15], w, 0, 0, 1) },
		"same output":    func() { same.Run(out[:15], in, w, 0, 0, 1) },
		"same weights":   func() { same.Run(out, in, w[:8], 0, 0, 1) },
		"stride2 input":  func() { s2.Run(out, in[:15], 8, 2, w, 0, 0, 1) },
		"stride2 ld":     func() { s2.Run(out, in, 7, 2, w, 0, 0, 1) },
		"stride2 output": func() { s2.Run(out[:3], in, 8, 2, w, 0, 0, 1) },
		"stride2 rows":   func() { s2.Run(out, in, 8, 4, w, 0, 0, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: short slice accepted", name)
				}
			}()
			f()
		}()
	}
}

// TestSamePlanBlockMatchesReference checks SamePlan.BlockRange, over all the
// blocks of a plane, against the float64 sums of the convolution it
// defines, with and without bias and clamp, on the SamePlan geometries
// with 1 to 5 channels; and that nothing but the output positions of the
// Rows rows is written.
func TestSamePlanBlockMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		nt, n := g.kh*g.kw, g.oh*g.w
		for _, channels := range []int{1, 5} {
			cstride := g.h*g.w + 3
			in := make([]float32, (channels-1)*cstride+g.h*g.w)
			for i := range in {
				in[i] = r.Float32()*2 - 1
			}
			w := make([]float32, channels*nt*Rows)
			for i := range w {
				w[i] = r.Float32()*2 - 1
			}
			bias := make([]float32, Rows)
			for i := range bias {
				bias[i] = r.Float32() - 0.5
			}
			for _, withBias := range []bool{false, true} {
				ldo := n + 5
				out := make([]float32, (Rows-1)*ldo+n+40)
				for i := range out {
					out[i] = 1234
				}
				var b []float32
				if withBias {
					b = bias
				}
				// In two ranges: the blocks before the last, prefetching
				// planes of their own, and the last, without.
				last := p.Blocks() - 1
				next := make([]float32, len(in))
				p.BlockRange(out[:(Rows-1)*ldo+n], ldo, in, next, cstride, w, channels, 0, last, b, 0, 6)
				p.BlockRange(out[:(Rows-1)*ldo+n], ldo, in, nil, cstride, w, channels, last, last+1, b, 0, 6)
				for row := range Rows {
					for q := range n {
						i, j := q/g.w, q%g.w
						var want, mag float64
						for c := range channels {
							for kh := range g.kh {
								for kw := range g.kw {
									ih, iw := i+kh*g.dilH-g.padH, j+kw*g.dilW-g.padW
									if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
										continue
									}
									prod := float64(w[(c*nt+kh*g.kw+kw)*Rows+row]) * float64(in[c*cstride+ih*g.w+iw])
									want += prod
									mag += math.Abs(prod)
								}
							}
						}
						if withBias {
							want = min(max(want+float64(bias[row]), 0), 6)
						}
						if got := float64(out[row*ldo+q]); math.Abs(got-want) > 1e-5*mag+1e-6 {
							t.Fatalf("%+v, %d channels, bias %v: row %d position %d = %g, want %g", g, channels, withBias, row, q, got, want)
						}
					}
					for q := n; q < ldo && row*ldo+q < len(out); q++ {
						if out[row*ldo+q] != 1234 {
							t.Fatalf("%+v: row %d position %d past the outputs written", g, row, q)
						}
					}
				}
			}
		}
	}
}

// TestSamePlanBlockRangePanics checks that BlockRange refuses slices too
// short for the range it is asked for, next included, before any kernel
// reads them.
func TestSamePlanBlockRangePanics(t *testing.T) {
	p := NewSamePlan(7, 7, 7, 3, 3, 1, 1, 1, 1)
	in, w := make([]float32, 2*49), make([]float32, 2*9*Rows)
	out := make([]float32, (Rows-1)*49+49)
	p.BlockRange(out, 49, in, in, 49, w, 2, 0, p.Blocks(), nil, 0, 0) // fits
	for name, f := range map[string]func(){
		"next":    func() { p.BlockRange(out, 49, in, in[:49], 49, w, 2, 0, 1, nil, 0, 0) },
		"input":   func() { p.BlockRange(out, 49, in[:49], nil, 49, w, 2, 0, 1, nil, 0, 0) },
		"output":  func() { p.BlockRange(out[:len(out)-1], 49, in, nil, 49, w, 2, 0, 1, nil, 0, 0) },
		"weights": func() { p.BlockRange(out, 49, in, nil, 49, w[:len(w)-1], 2, 0, 1, nil, 0, 0) },
		"blocks":  func() { p.BlockRange(out, 49, in, nil, 49, w, 2, 0, p.Blocks()+1, nil, 0, 0) },
		"bias":    func() { p.BlockRange(out, 49, in, nil, 49, w, 2, 0, 1, make([]float32, Rows-1), 0, 0) },
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

// TestSamePlanIm2col checks SamePlan.Im2col against the column matrix's
// definition on the SamePlan geometries, with one and three channels and
// rows wider than the plane: each value is the input the tap reads, or 0
// outside the image, and nothing past a row's outputs is written.
func TestSamePlanIm2col(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		nt, n := g.kh*g.kw, g.oh*g.w
		for _, channels := range []int{1, 3} {
			cstride := g.h*g.w + 2
			in := make([]float32, (channels-1)*cstride+g.h*g.w)
			for i := range in {
				in[i] = r.Float32() + 1 // never 0
			}
			ld := n + 7
			col := make([]float32, (channels*nt-1)*ld+n)
			for i := range col {
				col[i] = -5
			}
			p.Im2col(col, ld, in, cstride, channels)
			for c := range channels {
				for kh := range g.kh {
					for kw := range g.kw {
						row := col[(c*nt+kh*g.kw+kw)*ld:]
						for q := range n {
							var want float32
							if i, ok := g.tapInput(kh, kw, q); ok {
								want = in[c*cstride+i]
							}
							if row[q] != want {
								t.Fatalf("%+v, %d channels: row (%d, %d, %d) position %d = %g, want %g", g, channels, c, kh, kw, q, row[q], want)
							}
						}
						for q := n; q < ld && (c*nt+kh*g.kw+kw)*ld+q < len(col); q++ {
							if row[q] != -5 {
								t.Fatalf("%+v: row (%d, %d, %d) position %d past the outputs written", g, c, kh, kw, q)
							}
						}
					}
				}
			}
		}
	}
}

// TestSamePlanCol2im checks SamePlan.Col2im against its definition, each
// tap's row added in turn where the tap falls inside the image, bit for
// bit, on the centred SamePlan geometries, with one and three channels,
// rows wider than the plane and inputs that start as -0 or a value, and
// with every value -0 (which must stay -0); and
// that a plane whose kernel is not centred panics.
func TestSamePlanCol2im(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	tested := 0
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		nt, n := g.kh*g.kw, g.oh*g.w
		if !p.centred {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%+v: Col2im of a kernel not centred did not panic", g)
					}
				}()
				p.Col2im(make([]float32, g.h*g.w), g.h*g.w, make([]float32, nt*n), n, 1)
			}()
			continue
		}
		tested++
		for _, channels := range []int{1, 3, 0} {
			zeros := channels == 0 // every value -0: a masked lane that added +0 would show
			channels = max(channels, 1)
			cstride := g.h*g.w + 2
			ld := n + 7
			col := make([]float32, (channels*nt-1)*ld+n)
			for i := range col {
				col[i] = r.Float32()*2 - 1
				if zeros {
					col[i] = float32(math.Copysign(0, -1))
				}
			}
			got := make([]float32, (channels-1)*cstride+g.h*g.w)
			for i := range got {
				if i%3 == 0 || zeros {
					got[i] = float32(math.Copysign(0, -1))
				} else {
					got[i] = r.Float32()
				}
			}
			want := slices.Clone(got)
			for c := range channels {
				for kh := range g.kh {
					for kw := range g.kw {
						row := col[(c*nt+kh*g.kw+kw)*ld:]
						for q := range n {
							if i, ok := g.tapInput(kh, kw, q); ok {
								want[c*cstride+i] += row[q]
							}
						}
					}
				}
			}
			p.Col2im(got, cstride, col, ld, channels)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v, %d channels: input %d = %g, want %g", g, channels, i, got[i], want[i])
				}
			}
		}
	}
	if tested < 5 {
		t.Fatalf("only %d centred geometries", tested)
	}
}

// TestStride2PlanRunRows requires RunRows to give, bit for bit, what Run
// gives row by row (odd and even counts of output rows, one to three
// kernel rows, pairs of output rows that share an input row and pairs
// that do not, NaN in the input), and to write nothing between or past
// the output rows.
func TestStride2PlanRunRows(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, g := range []struct{ width, pad int }{{112, 1}, {56, 1}, {14, 1}, {7, 1}, {9, 0}, {33, 1}, {64, 1}} {
		ow := max(1, (g.width+2*g.pad-3)/2+1)
		p := NewStride2Plan(g.width, ow, g.pad)
		for _, c := range []struct{ rows, gap int }{{1, 0}, {3, 0}, {3, 5}} {
			// gap: the output rows' input rows more than twice the kernel
			// rows' distance apart (no input row shared by a pair)
			rows := c.rows
			for _, nout := range []int{1, 2, 5} {
				ld, ldo := g.width+1, ow+3
				instep := 2*ld + c.gap
				in := make([]float32, (nout-1)*instep+(rows-1)*ld+g.width)
				for i := range in {
					in[i] = (r.Float32()*2 - 1) * 8
				}
				in[len(in)/2] = float32(math.NaN())
				w := make([]float32, 3*rows)
				for i := range w {
					w[i] = r.Float32()*2 - 1
				}
				got := make([]float32, nout*ldo+5)
				for i := range got {
					got[i] = 1234
				}
				want := append([]float32(nil), got...)
				p.RunRows(got, ldo, in, ld, instep, rows, nout, w, 0.5, 0, 6)
				for o := range nout {
					p.Run(want[o*ldo:][:ow], in[o*instep:], ld, rows, w, 0.5, 0, 6)
				}
				requireSameBits(t, got, want, "%+v, %+v, %d output rows (against row by row)", g, c, nout)
			}
		}
	}
}

// TestSamePlanRunPlanes requires RunPlanes to give, bit for bit, what Run
// gives plane by plane (odd and even plane counts, with and without a
// bias, NaN in the input), and to write nothing between or past the
// planes' outputs.
func TestSamePlanRunPlanes(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		nt, n := g.kh*g.kw, g.oh*g.w
		for _, planes := range []int{1, 2, 5} {
			for _, withBias := range []bool{false, true} {
				ldi, ldo, ldw := g.h*g.w+3, n+5, nt+2
				in := make([]float32, (planes-1)*ldi+g.h*g.w)
				for i := range in {
					in[i] = (r.Float32()*2 - 1) * 8
				}
				in[len(in)/2] = float32(math.NaN())
				w := make([]float32, (planes-1)*ldw+nt)
				for i := range w {
					w[i] = r.Float32()*2 - 1
				}
				var bias []float32
				if withBias {
					bias = make([]float32, planes)
					for i := range bias {
						bias[i] = r.Float32() - 0.5
					}
				}
				got := make([]float32, planes*ldo+7)
				for i := range got {
					got[i] = 1234
				}
				want := append([]float32(nil), got...)
				p.RunPlanes(got, ldo, in, ldi, w, ldw, bias, planes, 0, 6)
				for k := range planes {
					var b float32
					if withBias {
						b = bias[k]
					}
					p.Run(want[k*ldo:][:n], in[k*ldi:][:g.h*g.w], w[k*ldw:][:nt], b, 0, 6)
				}
				requireSameBits(t, got, want, "%+v, %d planes, bias %v (against plane by plane)", g, planes, withBias)
			}
		}
	}
}

// TestSamePlanTapDotsImages checks TapDotsImages against the float64
// sums over every image's positions, on the SamePlan geometries with one
// to five images, and, for one image, against TapDots bit for bit.
func TestSamePlanTapDotsImages(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, g := range sameGeometries {
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		nt, n := g.kh*g.kw, g.oh*g.w
		for _, images := range []int{1, 2, 5} {
			ldi, ldy := g.h*g.w+5, n+3
			in := make([]float32, (images-1)*ldi+g.h*g.w)
			for i := range in {
				in[i] = r.Float32()*2 - 1
			}
			dy := make([]float32, (images-1)*ldy+n)
			for i := range dy {
				dy[i] = r.Float32()*2 - 1
			}
			acc := make([]float64, TapAcc*nt)
			p.TapDotsImages(acc, dy, ldy, in, ldi, images)
			if images == 1 {
				one := make([]float64, TapAcc*nt)
				p.TapDots(one, dy[:n], in[:g.h*g.w])
				for i := range acc {
					if acc[i] != one[i] {
						t.Fatalf("%+v: one image: partial sum %d = %g, TapDots %g", g, i, acc[i], one[i])
					}
				}
			}
			sums := make([]float64, nt)
			TapSums(sums, acc)
			for kh := range g.kh {
				for kw := range g.kw {
					var want, mag float64
					for k := range images {
						for i := range g.oh {
							for j := range g.w {
								ih, iw := i+kh*g.dilH-g.padH, j+kw*g.dilW-g.padW
								if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
									continue
								}
								prod := float64(dy[k*ldy+i*g.w+j]) * float64(in[k*ldi+ih*g.w+iw])
								want += prod
								mag += math.Abs(prod)
							}
						}
					}
					if got := sums[kh*g.kw+kw]; math.Abs(got-want) > 1e-5*mag+1e-6 {
						t.Fatalf("%+v, %d images: tap (%d, %d) = %g, want %g", g, images, kh, kw, got, want)
					}
				}
			}
		}
	}
}

// requireSameBits fails unless got and want hold the same bits, naming
// the first element that differs after the message.
func requireSameBits(t *testing.T, got, want []float32, msg string, args ...any) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf(msg+": [%d] = %g, want %g", append(args, i, got[i], want[i])...)
		}
	}
}

// TestStride2PlanRunBlock checks Stride2Plan.RunBlock against its float64
// sum over the columns inside the rows, for one to three channels and
// kernel rows, rows that end inside and at the end of a step, with and
// without padding, a NaN read by some outputs, every clamp; and that
// nothing between or past the output rows is written (the Go loop runs
// under the noasm tag).
func TestStride2PlanRunBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	run := func(name string) {
		for _, g := range []struct{ width, pad int }{{224, 1}, {112, 1}, {14, 1}, {7, 1}, {9, 0}, {33, 1}, {64, 1}, {2, 1}} {
			ow := max(1, (g.width+2*g.pad-3)/2+1)
			p := NewStride2Plan(g.width, ow, g.pad)
			for _, channels := range []int{1, 3} {
				for _, rows := range []int{1, 2, 3} {
					ld, cstride, ldo, wstride := g.width+2, 3*(g.width+2)+5, ow+3, 3*rows*Lanes+4
					in := make([]float32, (channels-1)*cstride+(rows-1)*ld+g.width)
					for i := range in {
						in[i] = (r.Float32()*2 - 1) * 8
					}
					in[len(in)/2] = float32(math.NaN())
					w := make([]float32, (channels-1)*wstride+3*rows*Lanes)
					for i := range w {
						w[i] = r.Float32()*2 - 1
					}
					bias := make([]float32, Lanes)
					for i := range bias {
						bias[i] = r.Float32() - 0.5
					}
					for _, c := range clamps {
						out := make([]float32, Lanes*ldo+9)
						for i := range out {
							out[i] = 1234
						}
						p.RunBlock(out, ldo, in, ld, cstride, channels, rows, w, wstride, bias, c[0], c[1])
						for o := range Lanes {
							for j := range ow {
								var want, mag float64
								hasNaN := false
								for ch := range channels {
									for rr := range rows {
										for k := range 3 {
											col := 2*j - g.pad + k
											if col < 0 || col >= g.width {
												continue
											}
											x := in[ch*cstride+rr*ld+col]
											hasNaN = hasNaN || math.IsNaN(float64(x))
											prod := float64(w[ch*wstride+(3*rr+k)*Lanes+o]) * float64(x)
											want += prod
											mag += math.Abs(prod)
										}
									}
								}
								checkOutput(t, fmt.Sprintf("%s %+v, %d channels, %d rows: out[%d][%d]", name, g, channels, rows, o, j), out[o*ldo+j], want, mag, hasNaN, bias[o], c)
							}
							for i := o*ldo + ow; i < (o+1)*ldo && i < len(out); i++ {
								if out[i] != 1234 {
									t.Fatalf("%s %+v: out[%d] outside the output rows written", name, g, i)
								}
							}
						}
						for i := Lanes * ldo; i < len(out); i++ {
							if out[i] != 1234 {
								t.Fatalf("%s %+v: out[%d] past the output rows written", name, g, i)
							}
						}
					}
				}
			}
		}
	}
	run("RunBlock")
}

// TestSameRowsMatchesGeneralKernel requires the kernel of plans whose
// kernel rows are 3 wide (sameRowsAVX512: row by row, one load per kernel
// row, shifted a column either way in registers) to give, bit for bit, what the general kernel
// that loads every tap gives, plane by plane: MobileNet's planes, a band
// of rows of a larger plane (no padding above or below), taller and
// dilated kernels, one kernel row, planes narrower than a vector, NaN in
// the input, every clamp.
func TestSameRowsMatchesGeneralKernel(t *testing.T) {
	if !haveAsm {
		t.Skip("no AVX-512")
	}
	r := rand.New(rand.NewPCG(29, 30))
	geometries := append([]sameGeometry{
		{56, 56, 56, 3, 3, 1, 1, 1, 1},
		{28, 28, 28, 3, 3, 1, 1, 1, 1},
		{30, 56, 28, 3, 3, 0, 1, 1, 1}, // a band in the middle of a plane
		{29, 56, 28, 3, 3, 1, 1, 1, 1}, // the top band
		{29, 56, 28, 3, 3, 0, 1, 1, 1}, // the bottom band
		{9, 9, 9, 5, 3, 2, 1, 1, 1},
		{10, 10, 10, 3, 3, 2, 1, 2, 1},
		{4, 16, 4, 3, 3, 1, 1, 1, 1},
		{3, 15, 3, 3, 3, 1, 1, 1, 1},
		{2, 2, 2, 3, 3, 1, 1, 1, 1},
		{3, 64, 3, 3, 3, 1, 1, 1, 1},  // a row of one whole chunk
		{3, 65, 3, 3, 3, 1, 1, 1, 1},  // and one more column
		{4, 130, 4, 3, 3, 1, 1, 1, 1}, // three chunks
	}, sameGeometries...)
	for _, g := range geometries {
		if !rowsKernel(g.kw, g.padW, g.dilW) {
			continue
		}
		p := NewSamePlan(g.h, g.w, g.oh, g.kh, g.kw, g.padH, g.padW, g.dilH, g.dilW)
		// The row kernel on every width, even those useRows leaves to the
		// general kernel.
		p.rows = newRowsPlan(g.h, g.w, g.oh, g.kh, g.padH, g.dilH)
		nt, n := g.kh*g.kw, g.oh*g.w
		const planes = 3
		ldi, ldo := g.h*g.w+5, n+3
		in := make([]float32, planes*ldi)
		for i := range in {
			in[i] = (r.Float32()*2 - 1) * 8
		}
		in[ldi+g.h*g.w/2] = float32(math.NaN())
		w := make([]float32, planes*nt)
		for i := range w {
			w[i] = r.Float32()*2 - 1
		}
		bias := []float32{0.25, -0.5, 1}
		for _, c := range clamps {
			got := make([]float32, planes*ldo)
			want := make([]float32, planes*ldo)
			for i := range got {
				got[i], want[i] = 1234, 1234
			}
			p.runRows(got, ldo, in, ldi, w, nt, &bias[0], 1, planes, c[0], c[1])
			for k := range planes {
				sameAVX512(&want[k*ldo], &in[k*ldi], &p.taps[0], nt, &w[k*nt], &p.masks[0], p.nv4, bias[k], c[0], c[1], p.steps4())
			}
			requireSameBits(t, got, want, "%+v, clamp %v (against the general kernel)", g, c)
		}
	}
}

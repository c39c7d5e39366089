package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
	"github.com/hora-dl/hora/device/cpu/internal/winograd"
)

// 3×3 convolutions with unit stride run through a Winograd algorithm
// (package winograd) when it pays: F(4×4, 3×3) cuts the input into 6×6
// patches overlapping by two, transforms each patch and filter, and 36
// GEMMs of output channels × input channels × tiles replace the im2col
// GEMM, 36 multiply-adds per 4×4 outputs and channel pair instead of 144;
// F(2×2, 3×3), on 4×4 patches, needs 16 per 2×2 outputs, and 16 smaller
// GEMMs. Both move less memory than im2col's nine copies of the input. The
// input gradient of such a convolution is one too (the rotated filters,
// input and output channels swapped), and takes the same path.

// winoGeom is one convolution (a forward one, or the one that computes an
// input gradient, see gradInputShape) in Winograd terms: its output is cut
// into th rows of tw tiles of t.Tile × t.Tile.
//
// A task takes a chunk of rowsPerChunk tile rows of the batch and lays
// them side by side as one long row of tiles: each tile row is a segment
// of seg = tw+1 lanes, its tw tiles and one unused lane (the tile that
// would straddle two segments), so that small planes (7×7: 4 tiles a row)
// still fill the transforms' 16 lanes and one call covers the chunk.
type winoGeom struct {
	convShape
	t              *winograd.Transform
	th, tw, seg    int
	tileRows       int // N·th
	rowsPerChunk   int // tile rows per task
	chunks         int
	ld             int // row stride of the transformed inputs and products
	rowLen, outLen int // lengths of the chunk's input and output rows
}

func newWinoGeom(s convShape, t *winograd.Transform, workers int) winoGeom {
	g := winoGeom{convShape: s, t: t}
	g.th, g.tw = ceilDiv(s.oh, t.Tile), ceilDiv(s.ow, t.Tile)
	g.seg = g.tw + 1
	g.tileRows = s.N * g.th
	// A task transforms about 64K input-channel·tile values per matrix
	// (a 256 KiB slice of each of the matrices the GEMMs read), enough
	// tiles for the GEMMs to stream the transformed filters from memory
	// only a few times, and a multiple of the workers' count of tasks (7
	// chunks on 2 workers would leave one idle an eighth of the time).
	target := min(1024, max(64, (64<<10)/max(1, s.C)))
	chunks := ceilDiv(ceilDiv(g.tileRows, max(1, target/g.seg)), workers) * workers
	g.rowsPerChunk = ceilDiv(g.tileRows, min(chunks, g.tileRows))
	g.chunks = ceilDiv(g.tileRows, g.rowsPerChunk)
	lanes := g.rowsPerChunk*g.seg - 1
	g.ld = winograd.Span(lanes)
	g.rowLen, g.outLen = t.RowLen(lanes), t.OutLen(lanes)
	return g
}

// workSize is the scratch one task needs: the transformed input and
// product matrices, the input rows of a patch and the output rows of a
// tile.
func (g winoGeom) workSize() int {
	return g.t.Matrices*(g.C+g.OutC)*g.ld + g.t.Patch*g.rowLen + g.t.Tile*g.outLen
}

// winogradShape reports whether the convolution is one the Winograd path
// computes: 3×3, unit stride and dilation, one group, padding of at most 2
// (so that its input gradient is one too).
func (s convShape) winogradShape() bool {
	return s.KH == 3 && s.KW == 3 && s.StrideH == 1 && s.StrideW == 1 && s.DilH == 1 && s.DilW == 1 &&
		s.Groups == 1 && s.PadH <= 2 && s.PadW <= 2 && s.oh > 0 && s.ow > 0
}

// winogradAlgo is a Winograd algorithm, winograd.F2 or winograd.F4 (a
// name for files that have their own variable called winograd).
type winogradAlgo = winograd.Transform

// useWinograd reports whether the convolution s (a forward one, or the
// gradInputShape of one) takes a Winograd path (see winogradTransform).
func useWinograd(s convShape, kept bool) bool { return winogradTransform(s, kept) != nil }

// winogradChoices are the Winograd algorithms in the order they are tried,
// with the fewest tiles in the batch (counting the unused lane of each
// tile row: the columns of its GEMMs) each needs. F(4×4, 3×3) reads 36
// transformed filter matrices for each chunk of tiles, 2.25 times F(2×2,
// 3×3)'s 16: over few tiles it spends its time fetching filters from
// memory (at batch 1, resnet18's 14×14 layers, 20 tiles, ran 2× slower in
// F(4×4, 3×3); its 28×28 ones, 56 tiles, 4% faster for the model once the
// kept filters were in bands), while over many it does 1.78× fewer
// multiply-adds (BenchmarkWinograd, 2 Zen 5 threads: at batch 32, 56×56
// 16.5 → 12.2 ms, 28×28 12.3 → 8.8, 14×14 12.6 → 10.5; 7×7, which F(2×2,
// 3×3) does not take, 12.7 against im2col's 17.3; at batch 1, 56×56, 210
// tiles, 0.38 → 0.30).
var winogradChoices = []struct {
	t        *winograd.Transform
	minLanes int
	// narrowSaving is the least saving of multiplications (im2col's over
	// the algorithm's, see winogradTransform) it needs when a side has
	// fewer than 128 channels: its transforms, per output, then weigh
	// more against the GEMMs. ResNet-20's 64-channel 7×7 layers at batch
	// 128 (a saving of 2.0) ran forward in 1.67 ms in F(4×4, 3×3) against
	// im2col's 1.32; resnet18's 512-channel ones, the same saving, 12.7
	// against 17.3 ms; its 64-channel 56×56 ones (a saving of 3.7) 12.2
	// against F(2×2, 3×3)'s 16.5.
	narrowSaving float64
}{
	{winograd.F4, 48, 3},
	{winograd.F2, 0, 0},
}

// winogradTransform returns the Winograd algorithm the convolution s (a
// forward one, or the gradInputShape of one) runs through, or nil for
// none: with the vector transforms only, and where it was measured to pay
// (BenchmarkWinograd):
//   - at least 64 channels on each side: with fewer, the transforms cost as
//     much as the GEMMs save (ResNet-20's 16 and 32 channels ran at 0.8–1.1×
//     of im2col);
//   - at least 1.67× fewer multiplications than im2col (the saving),
//     counting the tiles' padding and the unused lane of each tile row
//     (Matrices·th·(tw+1) against 9·oh·ow per channel pair): 7×7 planes in
//     F(2×2, 3×3) (1.38×) ran at 0.7–1.0×; more with fewer channels (see
//     winogradChoices);
//   - the algorithm's fewest tiles (winogradChoices);
//   - at least 512 outputs in the batch, over which the transform of the
//     filters, done on every call, is spread, unless the transformed
//     filters are kept with constant weights (kept; see derived): then
//     resnet18's 14×14 layers of 256 channels at batch 1 ran in 0.41 ms
//     instead of im2col's 0.58 (2 Zen 5 threads).
func winogradTransform(s convShape, kept bool) *winograd.Transform {
	if !s.winogradShape() || !winograd.Fast() || s.C < 64 || s.OutC < 64 || !(kept || s.N*s.oh*s.ow >= 512) {
		return nil
	}
	for _, c := range winogradChoices {
		th, tw := ceilDiv(s.oh, c.t.Tile), ceilDiv(s.ow, c.t.Tile)
		saving := float64(9*s.oh*s.ow) / float64(c.t.Matrices*th*(tw+1))
		if min(s.C, s.OutC) < 128 && saving < c.narrowSaving {
			continue
		}
		if saving >= 1.67 && s.N*th*(tw+1) >= c.minLanes {
			return c.t
		}
	}
	return nil
}

// winogradForward computes y = act(conv(x, w) + bias + res) of a 3×3
// unit-stride convolution (bias and the residual res may be nil) through
// the algorithm t. The transformed filters are kept with wb when it is
// constant (see derived).
func winogradForward(dev *Device, s convShape, t *winogradAlgo, act device.Activation, y, x, w, bias, res []float32, wb *Buffer) {
	key := derivedKey{kind: winogradFilters, outC: s.OutC, inC: s.C, taps: t.Matrices}
	// Kept filters are laid out in bands of rows, as weightPanels lays out
	// an im2col GEMM's weights, so that a tile reads them as one stream
	// (an inference reads them from memory): resnet18 at batch 1 9.6 →
	// 8.7 ms, at batch 32 210 → 197 ms (2 Zen 5 threads).
	mr := keptBandRows(dev, wb)
	key.alt = mr
	n := t.Matrices * s.OutC * s.C
	u, held := derived(wb, key, n, func(u []float32) {
		plain := u
		if mr > 0 {
			sc := getScratch[float32](n)
			defer putScratch(sc)
			plain = sc.s
		}
		launch(dev, s.OutC, t.Matrices*9*s.C, winoFilterArgs{dev: dev, t: t, u: plain, w: w, outC: s.OutC, inC: s.C})
		if mr > 0 {
			for xi := range t.Matrices {
				toBands(u[xi*s.OutC*s.C:], plain[xi*s.OutC*s.C:], s.OutC, s.C, mr)
			}
		}
	})
	defer held.release()
	winogradRun(dev, newWinoGeom(s, t, dev.numWorkers()), act, y, x, u, mr > 0, bias, res)
}

// winogradGradInput computes the input gradient dx of a 3×3 unit-stride
// convolution s through the algorithm t: the convolution gradInputShape of
// dy with each filter rotated by 180° and the channels swapped.
func winogradGradInput(dev *Device, s convShape, t *winogradAlgo, dx, dy, w []float32) {
	gs := s.gradInputShape()
	u := getScratch[float32](t.Matrices * s.OutC * s.C)
	defer putScratch(u)
	launch(dev, s.C, t.Matrices*9*s.OutC, winoFilterArgs{dev: dev, t: t, u: u.s, w: w, outC: s.OutC, inC: s.C, grad: true})
	winogradRun(dev, newWinoGeom(gs, t, dev.numWorkers()), device.ActNone, dx, dy, u.s, false, nil, nil)
}

// filterMatrices holds each algorithm's FilterMatrix(false) and (true).
var filterMatrices = map[*winograd.Transform][2][]float32{
	winograd.F2: {winograd.F2.FilterMatrix(false), winograd.F2.FilterMatrix(true)},
	winograd.F4: {winograd.F4.FilterMatrix(false), winograd.F4.FilterMatrix(true)},
}

// winoFilterArgs transform the filters w (outC×inC×3×3) into u, one
// small GEMM by the filter matrix per task index: for the forward
// convolution, index oc gives row oc of each matrix ξ of u (outC×inC, the
// transforms of filters w[oc][·], rows of 9); for the input gradient
// (grad), index c gives row c of each matrix (inC×outC, the rotated
// filters w[·][c], rows inC·9 apart).
type winoFilterArgs struct {
	dev       *Device
	t         *winograd.Transform
	u, w      []float32
	outC, inC int
	grad      bool
}

func (a *winoFilterArgs) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		if a.grad {
			gemmOn(a.dev, false, true, a.t.Matrices, a.outC, 9, 1, filterMatrices[a.t][1], 9, a.w[i*9:], a.inC*9, 0, a.u[i*a.outC:], a.inC*a.outC)
			continue
		}
		gemmOn(a.dev, false, true, a.t.Matrices, a.inC, 9, 1, filterMatrices[a.t][0], 9, a.w[i*a.inC*9:], 9, 0, a.u[i*a.inC:], a.outC*a.inC)
	}
}

// winogradRun runs the convolution of geometry g with the transformed
// filters u (each matrix in keptBandRows' bands when banded, see toBands,
// else row-major), one task per chunk of tile rows.
func winogradRun(dev *Device, g winoGeom, act device.Activation, y, x, u []float32, banded bool, bias, res []float32) {
	launch(dev, g.chunks, g.rowsPerChunk*g.tw*g.C*g.OutC*g.t.Matrices,
		winoArgs{dev: dev, g: g, act: act, y: y, x: x, u: u, banded: banded, bias: bias, res: res})
}

// winoArgs are the arguments of winogradRun; task index i is tile rows
// [i·rowsPerChunk, (i+1)·rowsPerChunk) of the batch.
type winoArgs struct {
	dev                *Device
	g                  winoGeom
	act                device.Activation
	y, x, u, bias, res []float32 // res: the residual added to y, or nil
	banded             bool      // u's matrices in bands of rows (gemm.SgemmBands reads them)
}

func (a *winoArgs) run(lo, hi int) {
	g := a.g
	patch, tile := g.t.Patch, g.t.Tile
	sc := getScratch[float32](g.workSize())
	defer putScratch(sc)
	ws := workspaces.Get().(*gemm.Workspace)
	defer workspaces.Put(ws)
	v := sc.s[:g.t.Matrices*g.C*g.ld]
	m := sc.s[len(v) : len(v)+g.t.Matrices*g.OutC*g.ld]
	rest := sc.s[len(v)+len(m):]
	var rowsBuf, outBuf [6][]float32
	rows, out := rowsBuf[:patch], outBuf[:tile]
	for i := range rows {
		rows[i] = rest[i*g.rowLen : (i+1)*g.rowLen]
	}
	for i := range out {
		out[i] = rest[patch*g.rowLen+i*g.outLen:][:g.outLen]
	}
	for chunk := lo; chunk < hi; chunk++ {
		r0 := chunk * g.rowsPerChunk
		r1 := min(r0+g.rowsPerChunk, g.tileRows)
		if r0 >= r1 {
			continue
		}
		lanes := (r1-r0)*g.seg - 1
		// The transformed inputs: matrix ξ is inC × lanes of the chunk.
		for i := range rows {
			clear(rows[i][tile*(r1-r0)*g.seg:])
		}
		for c := range g.C {
			for r := r0; r < r1; r++ {
				n, th := r/g.th, r%g.th
				plane := a.x[(n*g.C+c)*g.H*g.W:][:g.H*g.W]
				at := tile * (r - r0) * g.seg
				for i := range rows {
					g.fillRow(rows[i][at:at+tile*g.seg], plane, tile*th-g.PadH+i)
				}
			}
			g.t.Input(v[c*g.ld:], g.C*g.ld, rows, lanes)
		}
		// The products: matrix ξ is outC × lanes.
		for xi := range g.t.Matrices {
			u, vx, mx := a.u[xi*g.OutC*g.C:], v[xi*g.C*g.ld:], m[xi*g.OutC*g.ld:]
			if a.banded {
				gemm.SgemmBands(ws, g.OutC, lanes, g.C, u, vx, g.ld, mx, g.ld, gemm.Epilogue{})
				continue
			}
			gemmOn(a.dev, false, false, g.OutC, lanes, g.C, 1, u, g.C, vx, g.ld, 0, mx, g.ld)
		}
		// Back to tile×tile outputs per tile, then bias, residual and
		// activation over the rows of each plane just written.
		for oc := range g.OutC {
			g.t.Output(out, m[oc*g.ld:], g.OutC*g.ld, lanes)
			for r := r0; r < r1; r++ {
				n, th := r/g.th, r%g.th
				plane := a.y[(n*g.OutC+oc)*g.oh*g.ow:][:g.oh*g.ow]
				at := tile * (r - r0) * g.seg
				for i := range min(tile, g.oh-tile*th) {
					oh := tile*th + i
					copy(plane[oh*g.ow:(oh+1)*g.ow], out[i][at:])
				}
			}
			if a.bias == nil && a.res == nil && a.act == device.ActNone {
				continue
			}
			var b float32
			if a.bias != nil {
				b = a.bias[oc]
			}
			for r := r0; r < r1; {
				n, th := r/g.th, r%g.th
				end := min(r1, (n+1)*g.th) // tile rows of this image in the chunk
				at := (n*g.OutC + oc) * g.oh * g.ow
				p0, p1 := at+tile*th*g.ow, at+min(tile*(th+end-r), g.oh)*g.ow
				part := a.y[p0:p1]
				if a.res != nil {
					addActSlice(a.act, part, withBias(part, part, a.bias, b), a.res[p0:p1])
				} else {
					biasActSlice(a.act, part, part, b)
				}
				r = end
			}
		}
	}
}

// fillRow sets row (Tile·seg long) to input row ih of plane, shifted right by
// padW columns, zeros outside the image. (A pointer receiver: a copy of
// the geometry per call cost as much as filling a row of 28×28 planes.)
func (g *winoGeom) fillRow(row, plane []float32, ih int) {
	if ih < 0 || ih >= g.H {
		clear(row)
		return
	}
	src := plane[ih*g.W : (ih+1)*g.W]
	end := min(g.PadW+g.W, len(row))
	// The padding is a value or two on each side: stores, where clear
	// would be a call; the row itself one copy.
	for i := range g.PadW {
		row[i] = 0
	}
	copy(row[g.PadW:end], src)
	for i := end; i < len(row); i++ {
		row[i] = 0
	}
}

// ceilDiv is a/b rounded up, for b > 0 and any a.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return -(-a / b)
	}
	return (a + b - 1) / b
}

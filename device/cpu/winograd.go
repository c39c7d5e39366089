package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/winograd"
)

// 3×3 convolutions with unit stride run through the Winograd F(2×2, 3×3)
// algorithm (package winograd) when it pays: the input is cut into 4×4
// tiles overlapping by two, each tile and filter is transformed, and 16
// GEMMs of output channels × input channels × tiles replace the im2col
// GEMM, 16 multiply-adds per 2×2 outputs and channel pair instead of 36,
// with less memory traffic than im2col's nine copies of the input. The
// input gradient of such a convolution is one too (the rotated filters,
// input and output channels swapped), and takes the same path.

// winoGeom is one convolution (a forward one, or the one that computes an
// input gradient, see gradInputShape) in Winograd terms: its output is cut
// into th rows of tw tiles of 2×2.
//
// A task takes a chunk of rowsPerChunk tile rows of the batch and lays
// them side by side as one long row of tiles: each tile row is a segment
// of seg = tw+1 lanes, its tw tiles and one unused lane (the tile that
// would straddle two segments), so that small planes (7×7: 4 tiles a row)
// still fill the transforms' 16 lanes and one call covers the chunk.
type winoGeom struct {
	convShape
	th, tw, seg    int
	tileRows       int // N·th
	rowsPerChunk   int // tile rows per task
	chunks         int
	ld             int // row stride of the transformed inputs and products
	rowLen, outLen int // lengths of the chunk's input and output rows
}

func newWinoGeom(s convShape, workers int) winoGeom {
	g := winoGeom{convShape: s}
	g.th, g.tw = (s.oh+1)/2, (s.ow+1)/2
	g.seg = g.tw + 1
	g.tileRows = s.N * g.th
	// A task transforms about 64K input-channel·tile values per matrix
	// (a 256 KiB slice of each of the 16 matrices the GEMMs read), enough
	// tiles for the GEMMs to stream the transformed filters from memory
	// only a few times, and no fewer tasks than workers.
	target := min(1024, max(64, (64<<10)/max(1, s.C)))
	g.rowsPerChunk = max(1, target/g.seg)
	if per := (g.tileRows + workers - 1) / workers; per < g.rowsPerChunk {
		g.rowsPerChunk = max(1, per)
	}
	g.chunks = (g.tileRows + g.rowsPerChunk - 1) / g.rowsPerChunk
	lanes := g.rowsPerChunk*g.seg - 1
	g.ld = winograd.Span(lanes)
	g.rowLen, g.outLen = winograd.RowLen(lanes), winograd.OutLen(lanes)
	return g
}

// workSize is the scratch one task needs: the 16 transformed input and
// product matrices, four input rows and two output rows.
func (g winoGeom) workSize() int { return 16*(g.C+g.OutC)*g.ld + 4*g.rowLen + 2*g.outLen }

// winogradShape reports whether the convolution is one the Winograd path
// computes: 3×3, unit stride and dilation, one group, padding of at most 2
// (so that its input gradient is one too).
func (s convShape) winogradShape() bool {
	return s.KH == 3 && s.KW == 3 && s.StrideH == 1 && s.StrideW == 1 && s.DilH == 1 && s.DilW == 1 &&
		s.Groups == 1 && s.PadH <= 2 && s.PadW <= 2 && s.oh > 0 && s.ow > 0
}

// useWinograd reports whether the convolution s (a forward one, or the
// gradInputShape of one) takes the Winograd path: with the vector
// transforms only, and where it was measured to pay (BenchmarkWinograd):
//   - at least 64 channels on each side: with fewer, the transforms cost as
//     much as the GEMMs save (ResNet-20's 16 and 32 channels ran at 0.8–1.1×
//     of im2col);
//   - at least 1.67× fewer multiplications than im2col, counting the tiles'
//     padding and the unused lane of each tile row (16·th·(tw+1) against
//     9·oh·ow per channel pair): planes of 7×7 (1.38×) ran at 0.7–1.0×;
//   - at least 128 tiles in the batch, over which the transform of the
//     filters, done on every call, is spread, unless the transformed
//     filters are kept with constant weights (kept; see derived): then
//     resnet18's 14×14 layers of 256 channels at batch 1, 49 tiles, ran
//     in 0.41 ms instead of im2col's 0.58 (2 Zen 5 threads).
func useWinograd(s convShape, kept bool) bool {
	th, tw := (s.oh+1)/2, (s.ow+1)/2
	return s.winogradShape() && winograd.Fast() && s.C >= 64 && s.OutC >= 64 &&
		16*th*(tw+1)*10 <= 9*s.oh*s.ow*6 && (kept || s.N*th*tw >= 128)
}

// winogradForward computes y = act(conv(x, w) + bias + res) of a 3×3
// unit-stride convolution (bias and the residual res may be nil). The
// transformed filters are kept with wb when it is constant (see derived).
func winogradForward(dev *Device, s convShape, act device.Activation, y, x, w, bias, res []float32, wb *Buffer) {
	key := derivedKey{kind: winogradFilters, outC: s.OutC, inC: s.C}
	u, release := derived(wb, key, 16*s.OutC*s.C, func(u []float32) {
		launch(dev, s.OutC, 16*9*s.C, winoFilterArgs{dev: dev, u: u, w: w, outC: s.OutC, inC: s.C})
	})
	defer release()
	winogradRun(dev, newWinoGeom(s, dev.numWorkers()), act, y, x, u, bias, res)
}

// winogradGradInput computes the input gradient dx of a 3×3 unit-stride
// convolution s: the convolution gradInputShape of dy with each filter
// rotated by 180° and the channels swapped.
func winogradGradInput(dev *Device, s convShape, dx, dy, w []float32) {
	u := getScratch[float32](16 * s.OutC * s.C)
	defer putScratch(u)
	launch(dev, s.C, 16*9*s.OutC, winoFilterArgs{dev: dev, u: u.s, w: w, outC: s.OutC, inC: s.C, grad: true})
	winogradRun(dev, newWinoGeom(s.gradInputShape(), dev.numWorkers()), device.ActNone, dx, dy, u.s, nil, nil)
}

// filterMatrix holds winograd.FilterMatrix(false) and (true).
var filterMatrix = [2][]float32{winograd.FilterMatrix(false), winograd.FilterMatrix(true)}

// winoFilterArgs transform the filters w (outC×inC×3×3) into u, one
// small GEMM by the filter matrix per task index: for the forward
// convolution, index oc gives row oc of each matrix ξ of u (outC×inC, the
// transforms of filters w[oc][·], rows of 9); for the input gradient
// (grad), index c gives row c of each matrix (inC×outC, the rotated
// filters w[·][c], rows inC·9 apart).
type winoFilterArgs struct {
	dev       *Device
	u, w      []float32
	outC, inC int
	grad      bool
}

func (a *winoFilterArgs) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		if a.grad {
			gemmOn(a.dev, false, true, 16, a.outC, 9, 1, filterMatrix[1], 9, a.w[i*9:], a.inC*9, 0, a.u[i*a.outC:], a.inC*a.outC)
			continue
		}
		gemmOn(a.dev, false, true, 16, a.inC, 9, 1, filterMatrix[0], 9, a.w[i*a.inC*9:], 9, 0, a.u[i*a.inC:], a.outC*a.inC)
	}
}

// winogradRun runs the convolution of geometry g with the transformed
// filters u, one task per chunk of tile rows.
func winogradRun(dev *Device, g winoGeom, act device.Activation, y, x, u, bias, res []float32) {
	launch(dev, g.chunks, g.rowsPerChunk*g.tw*g.C*g.OutC*16,
		winoArgs{dev: dev, g: g, act: act, y: y, x: x, u: u, bias: bias, res: res})
}

// winoArgs are the arguments of winogradRun; task index i is tile rows
// [i·rowsPerChunk, (i+1)·rowsPerChunk) of the batch.
type winoArgs struct {
	dev                *Device
	g                  winoGeom
	act                device.Activation
	y, x, u, bias, res []float32 // res: the residual added to y, or nil
}

func (a *winoArgs) run(lo, hi int) {
	g := a.g
	sc := getScratch[float32](g.workSize())
	defer putScratch(sc)
	v := sc.s[:16*g.C*g.ld]
	m := sc.s[len(v) : len(v)+16*g.OutC*g.ld]
	rest := sc.s[len(v)+len(m):]
	var rows [4][]float32
	for i := range rows {
		rows[i] = rest[i*g.rowLen : (i+1)*g.rowLen]
	}
	out0 := rest[4*g.rowLen : 4*g.rowLen+g.outLen]
	out1 := rest[4*g.rowLen+g.outLen : 4*g.rowLen+2*g.outLen]
	for chunk := lo; chunk < hi; chunk++ {
		r0 := chunk * g.rowsPerChunk
		r1 := min(r0+g.rowsPerChunk, g.tileRows)
		if r0 >= r1 {
			continue
		}
		lanes := (r1-r0)*g.seg - 1
		// The transformed inputs: matrix ξ is inC × lanes of the chunk.
		for i := range rows {
			clear(rows[i][2*(r1-r0)*g.seg:])
		}
		for c := range g.C {
			for r := r0; r < r1; r++ {
				n, th := r/g.th, r%g.th
				plane := a.x[(n*g.C+c)*g.H*g.W:][:g.H*g.W]
				at := 2 * (r - r0) * g.seg
				for i := range rows {
					g.fillRow(rows[i][at:at+2*g.seg], plane, 2*th-g.PadH+i)
				}
			}
			winograd.Input(v[c*g.ld:], g.C*g.ld, &rows, lanes)
		}
		// The 16 products: matrix ξ is outC × lanes.
		for xi := range 16 {
			gemmOn(a.dev, false, false, g.OutC, lanes, g.C, 1, a.u[xi*g.OutC*g.C:], g.C,
				v[xi*g.C*g.ld:], g.ld, 0, m[xi*g.OutC*g.ld:], g.ld)
		}
		// Back to 2×2 outputs per tile, then bias, residual and
		// activation over the rows of each plane just written.
		for oc := range g.OutC {
			winograd.Output(out0, out1, m[oc*g.ld:], g.OutC*g.ld, lanes)
			for r := r0; r < r1; r++ {
				n, th := r/g.th, r%g.th
				plane := a.y[(n*g.OutC+oc)*g.oh*g.ow:][:g.oh*g.ow]
				at, oh := 2*(r-r0)*g.seg, 2*th
				copy(plane[oh*g.ow:(oh+1)*g.ow], out0[at:])
				if oh+1 < g.oh {
					copy(plane[(oh+1)*g.ow:(oh+2)*g.ow], out1[at:])
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
				p0, p1 := at+2*th*g.ow, at+min(2*(th+end-r), g.oh)*g.ow
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

// fillRow sets row (2·seg long) to input row ih of plane, shifted right by
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

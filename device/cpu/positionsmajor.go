package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// Positions-major convolution. The im2col path multiplies the OutC×ckk
// filter matrix by the ckk×l column matrix: the output channels are the
// GEMM's rows (tiles of mr = 14) and the plane's positions its columns
// (strips of nr = 32). A small plane fills its strips badly: a 7×7 plane's
// 49 positions take two strips, 77% full. Computed the other way round,
// the product's rows are the positions (49 in four tiles of 14, 88% full)
// and its columns the output channels (whole strips in every ResNet and
// MobileNet layer), reading the column matrix transposed and the filters
// as a packed op(B) (gemm.PackB, kept with the constant weights): resnet18's
// 512-channel 7×7 3×3 layer at batch 1 ran in 0.50 ms against 0.65, near
// the GEMM's peak (2 Zen 5 threads). The product, positions × channels,
// is then transposed into the output planes, where the bias, the residual
// and the activation are applied as on the im2col path, so the bits are
// the same. A batch puts images side by side (two 7×7 planes fill seven
// tiles); there the im2col path already fills its strips with several
// images, and positions-major gained 5% on resnet18's stride-2 layers and
// 4–13% on mobilenet_v2's 960 → 160 and 960 → 320 layers at batch 32,
// within the noise elsewhere.

// positionsMajor reports whether conv2dBiasAct computes s positions-major
// rather than through im2col: float32, one group, constant weights
// multiplied by Hora's kernel, a plane whose positions fill the
// GEMM's tiles of rows better than its strips of columns (7×7 and 14×14
// planes, not 28×28), and at least minPositionsMajorDepth values per sum.
func positionsMajor(dev *Device, s convShape, wb *Buffer) bool {
	if s.Groups != 1 || s.l == 0 || s.ckk < minPositionsMajorDepth || !wb.keepsForms() || wb.dt != device.Float32 ||
		dev.Float32GEMM(false, true, s.l, s.OutC, s.ckk) != "hora" {
		return false
	}
	b := gemm.Blocking()
	return tileFill(s.l, b.MR) > tileFill(s.l, b.NR)+0.05
}

// minPositionsMajorDepth is the least ckk (values per sum) for which
// positionsMajor transposes the product: with fewer, transposing it and
// the separate pass of the bias and activation cost about what the fuller
// tiles save. With a bias and ReLU6, 2 Zen 5 threads, positions-major ran
// resnet18's 7×7 3×3 layer (ckk 4608) 1.35× as fast as im2col, its
// stride-2 3×3 layers into 14×14 and 7×7 planes (1152, 2304) 1.21× and
// 1.34×, mobilenet_v2's 960 → 320 and 960 → 160 layers on 7×7 1.30× and
// 1.12×, 576 → 96 on 14×14 1.08×; 384 → 64 on 14×14 1.0×, 320 → 1280 on
// 7×7 1.03× alone and 0.96× in the model, 64 → 384 on 14×14 0.7×.
const minPositionsMajorDepth = 512

// tileFill is the share of n rows or columns in tiles of t that holds
// values.
func tileFill(n, t int) float64 { return float64(n) / float64((n+t-1)/t*t) }

// pmLayout is where a positions-major convolution reads its input and
// writes its output: N×C×H×W planes, or channels-last order (inCL, only
// for 1×1 convolutions: the images are then the column matrix, positions ×
// channels, read as they lie; outCL: the product, positions × output
// channels, is the output and is not transposed into planes).
type pmLayout struct{ inCL, outCL bool }

// conv2dPositionsMajor computes y = act(conv(x, w) + bias + res) for a
// convolution positionsMajor takes (res may be nil), or one that
// Conv2DChannelsLast computes with the layout lay. Channels-last input:
// one product for all images' positions. One image of planes: the column
// matrix (im2col, the channels split over the workers; a 1×1 convolution
// reads the image in place), then, split by blocks of positions or of
// output channels, the product positions × channels into scratch,
// transposed into y (or written to y in channels-last order), with the
// bias, residual and activation. Several images: the same for groups of
// images side by side (positionsMajorImages), a group per task.
func conv2dPositionsMajor(dev *Device, s convShape, lay pmLayout, act device.Activation, y, x, bias, res []float32, wb *Buffer) {
	pb, held := packedForm(wb, true, s.ckk, s.OutC) // the filters, OutC×ckk, read transposed
	defer held.release()
	args := positionsMajorArgs{s: s, act: act, y: y, pb: pb, bias: bias, res: res, outCL: lay.outCL}
	switch {
	case lay.inCL:
		args.col, args.lda, args.m = x, s.C, s.N*s.l
	case s.N > 1:
		gi := positionsMajorImages(s)
		launch(dev, (s.N+gi-1)/gi, gi*s.imgOut*s.ckk, positionsMajorImagesArgs{s: s, act: act, y: y, x: x, pb: pb, bias: bias, res: res, gi: gi, outCL: lay.outCL})
		return
	default:
		args.col, args.transA, args.lda, args.m = x, true, s.l, s.l
		if !s.pointwise() {
			sc := getScratch[float32](s.ckk * s.l)
			defer putScratch(sc)
			args.col = sc.s
			launch(dev, s.C, s.KH*s.KW*s.l, im2colChannelsArgs{s: s, col: args.col, x: x})
		}
	}
	if !lay.outCL {
		sc := getScratch[float32](args.m * s.OutC)
		defer putScratch(sc)
		args.yt = sc.s
	}
	b := gemm.Blocking()
	if panels := (s.OutC + b.NR - 1) / b.NR; panels >= 4*dev.numWorkers() && s.N == 1 && !lay.outCL {
		args.unit = b.NR // blocks of output channels, whole panels
		launch(dev, panels, b.NR*args.m*s.ckk, args)
		return
	}
	args.byPositions, args.unit = true, b.MR
	if lay.outCL {
		// Positions one by one: the workers get equal shares (a 7×7
		// plane's 49 as 25 and 24, not 28 and 21), and each tile's cost
		// follows its rows. mobilenet_v2 at batch 1, 2 threads: 2.17 →
		// 2.15 ms.
		args.unit = 1
	}
	launch(dev, (args.m+args.unit-1)/args.unit, args.unit*s.OutC*s.ckk, args)
}

// clEpilogueFloats is about how much of a channels-last product (in
// floats, 32 KiB) positions-major computes before it applies the bias,
// residual and activation to it, while it is in L1.
const clEpilogueFloats = 8192

// positionsMajorImages is the number of images side by side in one
// positions-major product of a batch: the fewest (up to 4) whose positions
// fill the GEMM's tiles of rows (two 7×7 planes: 98 positions in seven
// tiles of 14), else one.
func positionsMajorImages(s convShape) int {
	mr := gemm.Blocking().MR
	for gi := 1; gi <= min(4, s.N); gi++ {
		if tileFill(gi*s.l, mr) >= 0.95 {
			return gi
		}
	}
	return 1
}

// positionsMajorImagesArgs compute conv2dPositionsMajor for a batch: task
// index i is images [i·gi, (i+1)·gi).
type positionsMajorImagesArgs struct {
	s                   convShape
	act                 device.Activation
	y, x, pb, bias, res []float32
	gi                  int
	outCL               bool // y in channels-last order
}

func (a *positionsMajorImagesArgs) run(lo, hi int) {
	s := a.s
	ld := a.gi * s.l // the column matrix's positions: a group's images side by side
	sc := getScratch[float32](s.ckk*ld + ld*s.OutC)
	defer putScratch(sc)
	col, yt := sc.s[:s.ckk*ld], sc.s[s.ckk*ld:]
	ws := workspaces.Get().(*gemm.Workspace)
	defer workspaces.Put(ws)
	for grp := lo; grp < hi; grp++ {
		n0, n1 := grp*a.gi, min((grp+1)*a.gi, s.N)
		m := (n1 - n0) * s.l
		a0, lda := col, m
		if n1-n0 == 1 && s.pointwise() {
			a0, lda = a.x[n0*s.imgIn:], s.l // the image is its column matrix
		} else {
			for i := n0; i < n1; i++ {
				im2col(s, col[(i-n0)*s.l:], m, a.x[i*s.imgIn:], 0)
			}
		}
		if a.outCL { // the group's images' positions are consecutive rows of y
			out := a.y[n0*s.imgOut:]
			gemm.SgemmPackedB(ws, true, m, s.OutC, s.ckk, 0, s.OutC, 1, a0, lda, a.pb, 0, out, s.OutC, gemm.Epilogue{})
			rowsEpilogue(a.act, a.bias, out, offset(a.res, n0*s.imgOut), m, s.OutC)
			continue
		}
		gemm.SgemmPackedB(ws, true, m, s.OutC, s.ckk, 0, s.OutC, 1, a0, lda, a.pb, 0, yt, s.OutC, gemm.Epilogue{})
		for i := n0; i < n1; i++ {
			y := a.y[i*s.imgOut:]
			gemm.Transpose(y, s.l, yt[(i-n0)*s.l*s.OutC:], s.OutC, s.l, s.OutC)
			planesEpilogue(a.act, a.bias, y, offset(a.res, i*s.imgOut), s.l, s.OutC, 0, 0, s.l)
		}
	}
}

// im2colChannelsArgs unfold input channels [lo, hi) of one image: rows
// [lo·KH·KW, hi·KH·KW) of its column matrix, as im2col of the image cut
// to those channels.
type im2colChannelsArgs struct {
	s      convShape
	col, x []float32
}

func (a *im2colChannelsArgs) run(lo, hi int) {
	sub := a.s
	sub.C, sub.cg = hi-lo, hi-lo
	sub.ckk = sub.cg * sub.KH * sub.KW
	sub.imgIn = sub.C * sub.inPlane
	im2col(sub, a.col[lo*a.s.KH*a.s.KW*a.s.l:], a.s.l, a.x[lo*a.s.inPlane:], 0)
}

// positionsMajorArgs compute blocks of conv2dPositionsMajor's product of
// m positions: task index i is positions [i·unit, (i+1)·unit)
// (byPositions) or output channels [i·unit, (i+1)·unit). The column matrix
// col is ckk×m (transA, the planes' im2col) or m×ckk, lda apart.
type positionsMajorArgs struct {
	s              convShape
	act            device.Activation
	y, col, pb, yt []float32
	bias, res      []float32
	transA         bool
	lda, m         int
	outCL          bool // y in channels-last order: the product itself, no yt (split by positions only)
	byPositions    bool
	unit           int
}

func (a *positionsMajorArgs) run(lo, hi int) {
	s := a.s
	ws := workspaces.Get().(*gemm.Workspace)
	defer workspaces.Put(ws)
	q0, q1, c0, c1 := 0, a.m, 0, s.OutC
	if a.byPositions {
		q0, q1 = lo*a.unit, min(hi*a.unit, a.m)
	} else {
		c0, c1 = lo*a.unit, min(hi*a.unit, s.OutC)
	}
	if a.outCL { // always by positions: whole rows of y
		// Blocks of rows small enough that the bias, residual and
		// activation find the product in cache.
		mr := gemm.Blocking().MR
		step := max(1, clEpilogueFloats/(s.OutC*mr)) * mr
		for b0 := q0; b0 < q1; b0 += step {
			b1 := min(q1, b0+step)
			gemm.SgemmPackedB(ws, a.transA, b1-b0, s.OutC, s.ckk, 0, s.OutC, 1, a.colFrom(b0), a.lda, a.pb, 0, a.y[b0*s.OutC:], s.OutC, gemm.Epilogue{})
			rowsEpilogue(a.act, a.bias, a.y[b0*s.OutC:], offset(a.res, b0*s.OutC), b1-b0, s.OutC)
		}
		return
	}
	gemm.SgemmPackedB(ws, a.transA, q1-q0, s.OutC, s.ckk, c0, c1, 1, a.colFrom(q0), a.lda, a.pb, 0, a.yt[q0*s.OutC:], s.OutC, gemm.Epilogue{})
	for q := q0; q < q1; { // the rows of each image into its planes
		n := q / s.l
		e := min(q1, (n+1)*s.l)
		p0, y := q-n*s.l, a.y[n*s.imgOut+c0*s.l:]
		gemm.Transpose(y[p0:], s.l, a.yt[q*s.OutC+c0:], s.OutC, e-q, c1-c0)
		planesEpilogue(a.act, a.bias, y, offset(a.res, n*s.imgOut+c0*s.l), s.l, c1-c0, c0, p0, e-n*s.l)
		q = e
	}
}

// colFrom returns the column matrix from position q on: its column q
// (transA, ckk×m) or its row q (m×ckk).
func (a *positionsMajorArgs) colFrom(q int) []float32 {
	if a.transA {
		return a.col[q:]
	}
	return a.col[q*a.lda:]
}

// planesEpilogue sets out = act(out + bias + res) on columns [c0, c1) of
// rows [0, rows) (rows ld apart, output channels oc0…; res, nil for none,
// laid out as out), in the im2col path's operations: the bias (and, without
// a residual, the activation) in convEpilogue's pass, then the residual and
// the activation in residualRows'.
func planesEpilogue(act device.Activation, bias, out, res []float32, ld, rows, oc0, c0, c1 int) {
	if res == nil {
		convEpilogue(act, bias, out, ld, rows, oc0, c0, c1)
		return
	}
	convEpilogue(device.ActNone, bias, out, ld, rows, oc0, c0, c1)
	residualRows(act, out[c0:], res[c0:], ld, rows, c1-c0)
}

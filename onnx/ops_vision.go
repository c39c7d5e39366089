package onnx

import (
	"cmp"
	"math"
	"slices"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Vision and linear-algebra operators: Det, GridSample, RoiAlign and
// NonMaxSuppression.
//
// GridSample and RoiAlign compute their sampling positions and
// interpolation weights on the host from the (small) grid or box inputs
// and then gather the input's pixels on its device: one IndexSelect of
// the visTaps, a multiplication by the weights and a sum (or max) per output
// element, so the gradient flows to the image input through ordinary
// autograd operations. The grid and the boxes get no gradient.

func init() {
	register("Det", 11, true, opDet)
	register("GridSample", 16, true, opGridSample)
	register("RoiAlign", 10, true, opRoiAlign)
	register("RoiAlign", 16, true, opRoiAlign)
	register("NonMaxSuppression", 10, false, opNonMaxSuppression)
}

// opDet is Det: the determinant of each square matrix in the last two
// axes of X, computed on the host by LU decomposition with partial
// pivoting. When X requires a gradient, the result is det + Σ (X - X̄)·C
// with X̄ X's value held constant and C the cofactor matrices, whose value
// is det and whose gradient is the cofactor matrix (first order only).
func opDet(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("X")
	if err != nil {
		return nil, err
	}
	if err := nnFloat(c, x, "X"); err != nil {
		return nil, err
	}
	xs := x.Shape()
	r := len(xs)
	if r < 2 || xs[r-1] != xs[r-2] {
		return nil, c.Errorf("input X has shape %v, expected [..., M, M] (square matrices in the last two axes)", xs)
	}
	n := xs[r-1]
	batch := 1
	for _, d := range xs[:r-2] {
		batch *= d
	}
	vals := x.Value.Values()
	dets := make([]float64, batch)
	grad := x.RequiresGrad()
	var cof []float64
	if grad {
		cof = make([]float64, len(vals))
	}
	for b := range batch {
		m := vals[b*n*n : (b+1)*n*n]
		dets[b] = visDet(m, n)
		if grad {
			visCofactors(m, n, dets[b], cof[b*n*n:(b+1)*n*n])
		}
	}
	dt := x.Value.DType()
	dev := x.Value.Device()
	y := autograd.Constant(visHostTensor(dev, dt, dets, xs[:r-2]))
	if !grad {
		return []*autograd.Var{y}, nil
	}
	delta := autograd.Sub(x, autograd.Constant(x.Value))
	lin := autograd.SumAxes(autograd.Mul(delta, autograd.Constant(visHostTensor(dev, dt, cof, xs))), []int{r - 2, r - 1}, false)
	return []*autograd.Var{autograd.Add(y, lin)}, nil
}

// visHostTensor returns a tensor of type dt on dev holding vals.
func visHostTensor(dev device.Device, dt device.DType, vals []float64, shape []int) *tensor.Tensor {
	t := tensor.FromFloat64(vals, shape...)
	if dt != device.Float64 {
		t = t.Cast(dt)
	}
	if dev != t.Device() {
		t = t.To(dev)
	}
	return t
}

// det returns the determinant of the n×n row-major matrix m by Gaussian
// elimination with partial pivoting (m is not modified).
func visDet(m []float64, n int) float64 {
	a := slices.Clone(m)
	d := 1.0
	for k := range n {
		p := k
		for i := k + 1; i < n; i++ {
			if math.Abs(a[i*n+k]) > math.Abs(a[p*n+k]) {
				p = i
			}
		}
		if a[p*n+k] == 0 {
			return 0
		}
		if p != k {
			for j := range n {
				a[k*n+j], a[p*n+j] = a[p*n+j], a[k*n+j]
			}
			d = -d
		}
		piv := a[k*n+k]
		d *= piv
		for i := k + 1; i < n; i++ {
			f := a[i*n+k] / piv
			if f == 0 {
				continue
			}
			for j := k + 1; j < n; j++ {
				a[i*n+j] -= f * a[k*n+j]
			}
		}
	}
	return d
}

// visCofactors writes the cofactor matrix of the n×n matrix m (determinant
// d) to out: d·visInverse(m)ᵀ for a regular matrix, minors otherwise.
func visCofactors(m []float64, n int, d float64, out []float64) {
	if n == 0 {
		return
	}
	if inv, ok := visInverse(m, n); ok && d != 0 {
		for i := range n {
			for j := range n {
				out[i*n+j] = d * inv[j*n+i]
			}
		}
		return
	}
	minor := make([]float64, (n-1)*(n-1))
	for i := range n {
		for j := range n {
			k := 0
			for r := range n {
				if r == i {
					continue
				}
				for s := range n {
					if s != j {
						minor[k] = m[r*n+s]
						k++
					}
				}
			}
			sign := 1.0
			if (i+j)%2 == 1 {
				sign = -1
			}
			out[i*n+j] = sign * visDet(minor, n-1)
		}
	}
}

// visInverse returns the visInverse of the n×n matrix m by Gauss-Jordan
// elimination, or false when a pivot is zero.
func visInverse(m []float64, n int) ([]float64, bool) {
	a := slices.Clone(m)
	inv := make([]float64, n*n)
	for i := range n {
		inv[i*n+i] = 1
	}
	for k := range n {
		p := k
		for i := k + 1; i < n; i++ {
			if math.Abs(a[i*n+k]) > math.Abs(a[p*n+k]) {
				p = i
			}
		}
		if a[p*n+k] == 0 {
			return nil, false
		}
		for j := range n {
			a[k*n+j], a[p*n+j] = a[p*n+j], a[k*n+j]
			inv[k*n+j], inv[p*n+j] = inv[p*n+j], inv[k*n+j]
		}
		piv := a[k*n+k]
		for j := range n {
			a[k*n+j] /= piv
			inv[k*n+j] /= piv
		}
		for i := range n {
			if i == k || a[i*n+k] == 0 {
				continue
			}
			f := a[i*n+k]
			for j := range n {
				a[i*n+j] -= f * a[k*n+j]
				inv[i*n+j] -= f * inv[k*n+j]
			}
		}
	}
	return inv, true
}

// visTaps is a list of weighted pixel reads from an N×C×H×W image: src
// indexes the N·H·W pixels, w is the weight of each read.
type visTaps struct {
	src []int64
	w   []float64
}

func (t *visTaps) add(src int, w float64) {
	t.src = append(t.src, int64(src))
	t.w = append(t.w, w)
}

// visGather returns, for x (N×C×H×W), the [len(t.src), C] matrix of
// the weighted pixel reads in t.
func visGather(x *autograd.Var, t *visTaps) *autograd.Var {
	xs := x.Shape()
	rows := autograd.Reshape(autograd.Permute(x, 0, 2, 3, 1), xs[0]*xs[2]*xs[3], xs[1])
	dev := x.Value.Device()
	idx := tensor.FromInt64(t.src, len(t.src))
	if dev != idx.Device() {
		idx = idx.To(dev)
	}
	g := autograd.IndexSelect(rows, 0, idx)
	return autograd.Mul(g, autograd.Constant(visHostTensor(dev, x.Value.DType(), t.w, []int{len(t.w), 1})))
}

// visImage checks that input x, named name, is a float N×C×H×W image.
func visImage(c *nodeCtx, x *autograd.Var, name string) error {
	if err := nnFloat(c, x, name); err != nil {
		return err
	}
	if x.Value.Rank() != 4 {
		if x.Value.Rank() == 5 && c.Op() == "GridSample" {
			return c.Unsupported("volumetric GridSample (input %s of shape %v): only 4-D inputs are implemented", name, x.Shape())
		}
		return c.Errorf("input %s has shape %v, expected N×C×H×W", name, x.Shape())
	}
	return nil
}

// opGridSample is GridSample (opset 16) on 4-D inputs, with the
// bilinear, nearest and bicubic modes and the zeros, border and
// reflection padding modes, following PyTorch's grid_sample.
func opGridSample(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "grid")
	if err != nil {
		return nil, err
	}
	x, grid := in[0], in[1]
	if err := visImage(c, x, "X"); err != nil {
		return nil, err
	}
	if err := nnSameType(c, x, grid, "grid"); err != nil {
		return nil, err
	}
	xs, gs := x.Shape(), grid.Shape()
	if len(gs) != 4 || gs[0] != xs[0] || gs[3] != 2 {
		return nil, c.Errorf("input grid has shape %v, expected [%d, H_out, W_out, 2] for X %v", gs, xs[0], xs)
	}
	mode := c.AttrString("mode", "bilinear")
	pad := c.AttrString("padding_mode", "zeros")
	align := c.AttrInt("align_corners", 0) != 0
	switch mode {
	case "bilinear", "nearest", "bicubic":
	default:
		return nil, c.Errorf("attribute mode = %q, expected bilinear, nearest or bicubic", mode)
	}
	switch pad {
	case "zeros", "border", "reflection":
	default:
		return nil, c.Errorf("attribute padding_mode = %q, expected zeros, border or reflection", pad)
	}
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	Ho, Wo := gs[1], gs[2]
	k := map[string]int{"bilinear": 4, "nearest": 1, "bicubic": 16}[mode]
	if H == 0 || W == 0 || N*Ho*Wo == 0 {
		return []*autograd.Var{autograd.Constant(tensor.Full(x.Value.Device(), x.Value.DType(), 0, N, C, Ho, Wo))}, nil
	}
	if err := c.checkElements([]int{N * Ho * Wo * k, C}); err != nil {
		return nil, err
	}
	g := c.Floats(grid)
	t := &visTaps{src: make([]int64, 0, N*Ho*Wo*k), w: make([]float64, 0, N*Ho*Wo*k)}
	gsm := gsSampler{H: H, W: W, padMode: pad, align: align}
	for n := range N {
		base := n * H * W
		for p := range Ho * Wo {
			gx, gy := g[(n*Ho*Wo+p)*2], g[(n*Ho*Wo+p)*2+1]
			ix, iy := gsm.unnormalize(gx, W), gsm.unnormalize(gy, H)
			switch mode {
			case "bilinear":
				ix, iy = gsm.pad(ix, W), gsm.pad(iy, H)
				x0, y0 := math.Floor(ix), math.Floor(iy)
				tx, ty := ix-x0, iy-y0
				for _, dy := range [2]float64{0, 1} {
					for _, dx := range [2]float64{0, 1} {
						wy, wx := 1-ty, 1-tx
						if dy == 1 {
							wy = ty
						}
						if dx == 1 {
							wx = tx
						}
						gsm.tap(t, base, x0+dx, y0+dy, wx*wy)
					}
				}
			case "nearest":
				ix, iy = gsm.pad(ix, W), gsm.pad(iy, H)
				gsm.tap(t, base, math.RoundToEven(ix), math.RoundToEven(iy), 1)
			case "bicubic":
				x0, y0 := math.Floor(ix), math.Floor(iy)
				cx, cy := gsCubic(ix-x0), gsCubic(iy-y0)
				for i := range 4 {
					yy := gsm.pad(y0-1+float64(i), H)
					for j := range 4 {
						xx := gsm.pad(x0-1+float64(j), W)
						gsm.tap(t, base, xx, yy, cy[i]*cx[j])
					}
				}
			}
		}
	}
	y := visGather(x, t)                                           // [N·Ho·Wo·k, C]
	y = autograd.Sum(autograd.Reshape(y, N*Ho*Wo, k, C), 1, false) // [N·Ho·Wo, C]
	y = autograd.Permute(autograd.Reshape(y, N, Ho, Wo, C), 0, 3, 1, 2)
	return []*autograd.Var{y}, nil
}

// gsSampler maps GridSample's normalized coordinates onto pixels of an
// H×W image.
type gsSampler struct {
	H, W    int
	padMode string
	align   bool
}

// unnormalize maps a coordinate in [-1, 1] onto [0, size-1]
// (align_corners) or [-0.5, size-0.5].
func (g gsSampler) unnormalize(v float64, size int) float64 {
	if g.align {
		return (v + 1) / 2 * float64(size-1)
	}
	return ((v+1)*float64(size) - 1) / 2
}

// pad applies the border or reflection padding to a pixel coordinate.
func (g gsSampler) pad(v float64, size int) float64 {
	switch g.padMode {
	case "border":
		return gsClip(v, 0, float64(size-1))
	case "reflection":
		if g.align {
			v = gsReflect(v, 0, 2*(size-1))
		} else {
			v = gsReflect(v, -1, 2*size-1)
		}
		return gsClip(v, 0, float64(size-1))
	}
	return v
}

// tap adds the read of pixel (x, y) of the image at base with weight w;
// a pixel outside the image (or a non-finite coordinate) reads zero.
func (g gsSampler) tap(t *visTaps, base int, x, y, w float64) {
	if !(x >= 0 && x <= float64(g.W-1) && y >= 0 && y <= float64(g.H-1)) {
		t.add(0, 0)
		return
	}
	t.add(base+int(y)*g.W+int(x), w)
}

func gsClip(v, lo, hi float64) float64 {
	return math.Min(math.Max(v, lo), hi)
}

// reflect reflects v into [twiceLow/2, twiceHigh/2] as PyTorch's
// reflect_coordinates does.
func gsReflect(v float64, twiceLow, twiceHigh int) float64 {
	if twiceLow == twiceHigh {
		return 0
	}
	lo := float64(twiceLow) / 2
	span := float64(twiceHigh-twiceLow) / 2
	v = math.Abs(v - lo)
	extra := math.Mod(v, span)
	if flips := math.Floor(v / span); math.Mod(flips, 2) == 0 {
		return extra + lo
	}
	return span - extra + lo
}

// gsCubic returns the weights of the four visTaps around a point at
// fraction t past the second one (cubic convolution with A = -0.75).
func gsCubic(t float64) [4]float64 {
	const a = -0.75
	c1 := func(x float64) float64 { return ((a+2)*x-(a+3))*x*x + 1 }
	c2 := func(x float64) float64 { return ((a*x-5*a)*x+8*a)*x - 4*a }
	return [4]float64{c2(t + 1), c1(t), c1(1 - t), c2(2 - t)}
}

// opRoiAlign is RoiAlign: average or max of bilinearly interpolated
// samples over the bins of each region of interest, following
// onnxruntime. Opset 10 has no coordinate_transformation_mode (it
// behaves as output_half_pixel); opset 16 defaults to half_pixel.
func opRoiAlign(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("X", "rois", "batch_indices")
	if err != nil {
		return nil, err
	}
	x, rois, bidx := in[0], in[1], in[2]
	if err := visImage(c, x, "X"); err != nil {
		return nil, err
	}
	if err := nnFloat(c, rois, "rois"); err != nil {
		return nil, err
	}
	if bidx.Value.DType() != device.Int64 {
		return nil, c.Errorf("input batch_indices must be an integer tensor, found %v", bidx.Value.DType())
	}
	rs := rois.Shape()
	if len(rs) != 2 || rs[1] != 4 {
		return nil, c.Errorf("input rois has shape %v, expected [num_rois, 4]", rs)
	}
	R := rs[0]
	if err := nnVector(c, bidx, "batch_indices", R); err != nil {
		return nil, err
	}
	a, err := roiAlignAttrs(c)
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	C, H, W := xs[1], xs[2], xs[3]
	if err := c.checkElements([]int{R, C, a.ph, a.pw}); err != nil {
		return nil, err
	}
	if R == 0 || C == 0 {
		return []*autograd.Var{autograd.Constant(tensor.Full(x.Value.Device(), x.Value.DType(), 0, R, C, a.ph, a.pw))}, nil
	}
	if H == 0 || W == 0 {
		return nil, c.Errorf("input X has shape %v: the image is empty", xs)
	}
	b, err := a.bins(c, xs, c.Floats(rois), c.Ints(bidx))
	if err != nil {
		return nil, err
	}
	y, err := a.pool(c, x, b)
	if err != nil {
		return nil, err
	}
	y = autograd.Permute(autograd.Reshape(y, R, a.ph, a.pw, C), 0, 3, 1, 2)
	return []*autograd.Var{y}, nil
}

// roiAlign is what the attributes of a RoiAlign node ask for.
type roiAlign struct {
	max       bool // mode max (else avg)
	halfPixel bool // coordinate_transformation_mode half_pixel
	ph, pw    int  // output_height, output_width: bins per region
	ratio     int  // sampling_ratio (0: adaptive)
	scale     float64
}

// roiAlignAttrs reads the attributes of a RoiAlign node.
func roiAlignAttrs(c *nodeCtx) (roiAlign, error) {
	var a roiAlign
	mode := c.AttrString("mode", "avg")
	if mode != "avg" && mode != "max" {
		return a, c.Errorf("attribute mode = %q, expected avg or max", mode)
	}
	a.max = mode == "max"
	if c.Opset() >= 16 {
		switch ct := c.AttrString("coordinate_transformation_mode", "half_pixel"); ct {
		case "half_pixel":
			a.halfPixel = true
		case "output_half_pixel":
		default:
			return a, c.Errorf("attribute coordinate_transformation_mode = %q, expected half_pixel or output_half_pixel", ct)
		}
	}
	a.ph, a.pw = int(c.AttrInt("output_height", 1)), int(c.AttrInt("output_width", 1))
	if a.ph < 1 || a.pw < 1 {
		return a, c.Errorf("attributes output_height = %d and output_width = %d must be positive", a.ph, a.pw)
	}
	a.ratio = int(c.AttrInt("sampling_ratio", 0))
	if a.ratio < 0 {
		return a, c.Errorf("attribute sampling_ratio = %d must not be negative", a.ratio)
	}
	a.scale = c.AttrFloat("spatial_scale", 1)
	return a, nil
}

// roiBins are the bilinear taps of the samples of every bin of every
// region, in bin order, with what pooling them needs.
type roiBins struct {
	n      int     // number of bins: regions × ph × pw
	t      visTaps // the taps, weighted by 1/samples for avg
	dst    []int64 // avg: the bin of each tap
	start  []int   // max: the first tap of each bin
	counts []int   // max: the number of taps of each bin
}

// bins computes the taps of the samples of each bin of the regions box
// (x0, y0, x1, y1 per region) in the images batch of an X of shape xs.
func (a roiAlign) bins(c *nodeCtx, xs []int, box []float64, batch []int64) (roiBins, error) {
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	R := len(batch)
	offset := 0.0
	if a.halfPixel {
		offset = 0.5
	}
	b := roiBins{n: R * a.ph * a.pw}
	t := &b.t
	for r := range R {
		if batch[r] < 0 || batch[r] >= int64(N) {
			return b, c.Errorf("input batch_indices[%d] = %d is out of range for %d images", r, batch[r], N)
		}
		base := int(batch[r]) * H * W
		x0, y0 := box[4*r]*a.scale-offset, box[4*r+1]*a.scale-offset
		x1, y1 := box[4*r+2]*a.scale-offset, box[4*r+3]*a.scale-offset
		rw, rh := x1-x0, y1-y0
		if !a.halfPixel {
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		bh, bw := rh/float64(a.ph), rw/float64(a.pw)
		gh, gw := a.ratio, a.ratio
		if a.ratio == 0 {
			gh, gw = int(math.Ceil(rh/float64(a.ph))), int(math.Ceil(rw/float64(a.pw)))
		}
		if math.IsNaN(rh) || math.IsNaN(rw) || gh < 0 || gw < 0 {
			return b, c.Errorf("input rois[%d] = %v does not make a valid box", r, box[4*r:4*r+4])
		}
		if gh*gw > 1<<16 {
			return b, c.Errorf("input rois[%d] = %v needs %d×%d samples per bin (at most 65536)", r, box[4*r:4*r+4], gh, gw)
		}
		count := max(gh*gw, 1)
		for p := range a.ph * a.pw {
			bin := r*a.ph*a.pw + p
			py, px := p/a.pw, p%a.pw
			if a.max {
				b.start = append(b.start, len(t.src))
			}
			before := len(t.src)
			for iy := range gh {
				yy := y0 + float64(py)*bh + (float64(iy)+0.5)*bh/float64(gh)
				for ix := range gw {
					xx := x0 + float64(px)*bw + (float64(ix)+0.5)*bw/float64(gw)
					roiTaps(t, base, H, W, yy, xx)
				}
			}
			if !a.max {
				for i := before; i < len(t.src); i++ {
					t.w[i] /= float64(count)
					b.dst = append(b.dst, int64(bin))
				}
			} else {
				if len(t.src) == before {
					t.add(0, 0)
				}
				b.counts = append(b.counts, len(t.src)-before)
			}
			if err := c.checkElements([]int{len(t.src), C}); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// pool gathers the taps b of x and pools them per bin, the sum of the
// weighted taps for avg and their maximum for max: [bins, C].
func (a roiAlign) pool(c *nodeCtx, x *autograd.Var, b roiBins) (*autograd.Var, error) {
	dev, dt := x.Value.Device(), x.Value.DType()
	C := x.Value.Dim(1)
	g := visGather(x, &b.t) // [T, C]
	if !a.max {
		idx := tensor.FromInt64(b.dst, len(b.dst))
		if dev != idx.Device() {
			idx = idx.To(dev)
		}
		return autograd.IndexAdd(autograd.Constant(tensor.Full(dev, dt, 0, b.n, C)), 0, idx, g), nil
	}
	// Pad every bin to the same number of taps by repeating its first one
	// (which leaves the maximum unchanged), then take the max.
	k := slices.Max(b.counts)
	if err := c.checkElements([]int{b.n * k, C}); err != nil {
		return nil, err
	}
	order := make([]int64, 0, b.n*k)
	for bin := range b.n {
		for i := range k {
			j := b.start[bin]
			if i < b.counts[bin] {
				j += i
			}
			order = append(order, int64(j))
		}
	}
	idx := tensor.FromInt64(order, len(order))
	if dev != idx.Device() {
		idx = idx.To(dev)
	}
	return autograd.Max(autograd.Reshape(autograd.IndexSelect(g, 0, idx), b.n, k, C), 1, false), nil
}

// roiTaps adds the four visTaps of the bilinear interpolation at (y, x)
// of the H×W image at base, clamped the way onnxruntime's RoiAlign does
// (a sample more than one pixel outside the image reads zero).
func roiTaps(t *visTaps, base, H, W int, y, x float64) {
	if y < -1 || y > float64(H) || x < -1 || x > float64(W) || math.IsNaN(x) || math.IsNaN(y) {
		for range 4 {
			t.add(0, 0)
		}
		return
	}
	y, x = math.Max(y, 0), math.Max(x, 0)
	yl, xl := int(y), int(x)
	var yh, xh int
	if yl >= H-1 {
		yl, yh = H-1, H-1
		y = float64(yl)
	} else {
		yh = yl + 1
	}
	if xl >= W-1 {
		xl, xh = W-1, W-1
		x = float64(xl)
	} else {
		xh = xl + 1
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	t.add(base+yl*W+xl, hy*hx)
	t.add(base+yl*W+xh, hy*lx)
	t.add(base+yh*W+xl, ly*hx)
	t.add(base+yh*W+xh, ly*lx)
}

// opNonMaxSuppression is NonMaxSuppression: greedy selection, per batch
// and class, of the boxes by decreasing score (ties: lower index first),
// dropping those whose IoU with a selected box exceeds iou_threshold and
// those whose score is not above score_threshold. The output is an Int64
// [num_selected, 3] tensor of (batch, class, box) triples.
func opNonMaxSuppression(c *nodeCtx) ([]*autograd.Var, error) {
	in, err := c.inputs("boxes", "scores", "max_output_boxes_per_class?", "iou_threshold?", "score_threshold?")
	if err != nil {
		return nil, err
	}
	boxes, scores := in[0], in[1]
	if err := nnFloat(c, boxes, "boxes"); err != nil {
		return nil, err
	}
	if err := nnFloat(c, scores, "scores"); err != nil {
		return nil, err
	}
	bs, ss := boxes.Shape(), scores.Shape()
	if len(bs) != 3 || bs[2] != 4 {
		return nil, c.Errorf("input boxes has shape %v, expected [batch, boxes, 4]", bs)
	}
	if len(ss) != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
		return nil, c.Errorf("input scores has shape %v, expected [%d, classes, %d] for boxes %v", ss, bs[0], bs[1], bs)
	}
	scalar := func(i int, name string) (float64, bool, error) {
		v := in[i]
		if v == nil {
			return 0, false, nil
		}
		if v.Value.Len() != 1 {
			return 0, false, c.Errorf("input %s has shape %v, expected a scalar", name, v.Shape())
		}
		return v.Value.Values()[0], true, nil
	}
	maxOut, _, err := scalar(2, "max_output_boxes_per_class")
	if err != nil {
		return nil, err
	}
	iouTh, _, err := scalar(3, "iou_threshold")
	if err != nil {
		return nil, err
	}
	if iouTh < 0 || iouTh > 1 {
		return nil, c.Errorf("input iou_threshold = %g, expected a value in [0, 1]", iouTh)
	}
	scoreTh, hasScoreTh, err := scalar(4, "score_threshold")
	if err != nil {
		return nil, err
	}
	center := c.AttrInt("center_point_box", 0)
	if center != 0 && center != 1 {
		return nil, c.Errorf("attribute center_point_box = %d, expected 0 or 1", center)
	}
	B, N, C := bs[0], bs[1], ss[1]
	bv, sv := c.Floats(boxes), c.Floats(scores)
	// corners holds y1, x1, y2, x2 with y1 <= y2 and x1 <= x2.
	corners := make([][4]float64, B*N)
	for i := range corners {
		b := bv[4*i : 4*i+4]
		if center == 1 {
			corners[i] = [4]float64{b[1] - b[3]/2, b[0] - b[2]/2, b[1] + b[3]/2, b[0] + b[2]/2}
		} else {
			corners[i] = [4]float64{min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])}
		}
	}
	var out []int64
	type cand struct {
		score float64
		index int
	}
	for b := range B {
		for cl := range C {
			if maxOut <= 0 {
				break
			}
			sc := sv[(b*C+cl)*N : (b*C+cl+1)*N]
			var cands []cand
			for i, s := range sc {
				if !hasScoreTh || s > scoreTh {
					cands = append(cands, cand{s, i})
				}
			}
			slices.SortStableFunc(cands, func(p, q cand) int { return cmp.Compare(q.score, p.score) })
			var sel []int
			for _, cd := range cands {
				if float64(len(sel)) >= maxOut {
					break
				}
				keep := true
				for _, s := range sel {
					if nmsIOUAbove(corners[b*N+cd.index], corners[b*N+s], iouTh) {
						keep = false
						break
					}
				}
				if keep {
					sel = append(sel, cd.index)
					out = append(out, int64(b), int64(cl), int64(cd.index))
				}
			}
		}
	}
	return []*autograd.Var{c.ConstInts(out, len(out)/3, 3)}, nil
}

// nmsIOUAbove reports whether the intersection over union of boxes a and b
// (y1, x1, y2, x2) exceeds th; boxes of no area never overlap.
func nmsIOUAbove(a, b [4]float64, th float64) bool {
	ih := min(a[2], b[2]) - max(a[0], b[0])
	iw := min(a[3], b[3]) - max(a[1], b[1])
	if ih <= 0 || iw <= 0 {
		return false
	}
	areaA := (a[2] - a[0]) * (a[3] - a[1])
	areaB := (b[2] - b[0]) * (b[3] - b[1])
	if areaA <= 0 || areaB <= 0 {
		return false
	}
	inter := ih * iw
	union := areaA + areaB - inter
	if union <= 0 {
		return false
	}
	return inter/union > th
}

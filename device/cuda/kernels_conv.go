package cuda

import "github.com/hora-dl/hora/device"

// convArg is the C struct ConvShape (kernels/common.cuh).
type convArg struct {
	N, C, H, W                     int32
	OC, KH, KW                     int32
	SH, SW, PH, PW, DH, DW, Groups int32
	OH, OW                         int32
}

func newConvArg(p device.ConvParams) convArg {
	return convArg{
		N: int32(p.N), C: int32(p.C), H: int32(p.H), W: int32(p.W),
		OC: int32(p.OutC), KH: int32(p.KH), KW: int32(p.KW),
		SH: int32(p.StrideH), SW: int32(p.StrideW), PH: int32(p.PadH), PW: int32(p.PadW),
		DH: int32(p.DilH), DW: int32(p.DilW), Groups: int32(p.Groups),
		OH: int32(p.OutH()), OW: int32(p.OutW()),
	}
}

// convGeom holds the sizes of the matrix products of a convolution
// computed as im2col + GEMM: per image and group, the output
// (ocg × ohw) is the weight (ocg × k) times the column matrix (k × ohw).
type convGeom struct {
	g, cg, ocg int // groups, input and output channels per group
	k          int // cg·KH·KW: the inner dimension of the products
	ckk        int // C·KH·KW: the rows of an image's column matrix
	ohw, hw    int // output and input plane sizes
	pointwise  bool
}

func newConvGeom(p device.ConvParams) convGeom {
	g := convGeom{g: p.Groups, cg: p.C / p.Groups, ocg: p.OutC / p.Groups,
		ohw: p.OutH() * p.OutW(), hw: p.H * p.W}
	g.k = g.cg * p.KH * p.KW
	g.ckk = p.C * p.KH * p.KW
	// A 1×1 kernel with stride 1 and no padding reads the input as its own
	// column matrix.
	g.pointwise = p.KH == 1 && p.KW == 1 && p.StrideH == 1 && p.StrideW == 1 && p.PadH == 0 && p.PadW == 0
	return g
}

// isDepthwise reports whether every group has one input channel: the
// direct conv_dw kernels handle those.
func isDepthwise(p device.ConvParams) bool { return p.C == p.Groups }

// colBudget bounds the elements of the scratch matrices a convolution
// allocates (column matrices, weight-gradient partials): the images are
// processed in chunks that fit. (A variable so that tests can make the
// chunks small.)
var colBudget = 1 << 25

// imagesPerChunk returns how many of n images to process at once when
// each needs perImage scratch elements.
func imagesPerChunk(n, perImage int) int {
	return max(1, min(n, colBudget/max(perImage, 1)))
}

// Conv2D computes y = conv(x, w).
func (k *kernels) Conv2D(p device.ConvParams, y, x, w device.Buffer) {
	k.Conv2DBiasAct(p, device.ActNone, y, x, w, nil)
}

// Conv2DBiasAct computes y = act(conv(x, w) + bias) (bias may be nil): a
// depthwise convolution in one kernel (conv_dw), others as im2col and
// cuBLAS products per group, then bias_act in place.
func (k *kernels) Conv2DBiasAct(p device.ConvParams, act device.Activation, y, x, w, bias device.Buffer) {
	sfx := floatSuffix("Conv2D", y)
	noHalf("Conv2D", x, w, bias)
	ny := p.N * p.OutC * p.OutH() * p.OutW()
	if ny == 0 {
		return
	}
	s := newConvArg(p)
	if isDepthwise(p) {
		k.launch1D("conv_dw_"+sfx, ny, y, x, w, bias, s, int32(act))
		return
	}
	g := newConvGeom(p)
	nb := imagesPerChunk(p.N, g.ckk*g.ohw)
	var col *Buffer
	if !g.pointwise {
		if col = k.scratch(y.DType(), nb*g.ckk*g.ohw); col == nil {
			return
		}
		defer col.Free()
	}
	for n0 := 0; n0 < p.N; n0 += nb {
		cnt := min(nb, p.N-n0)
		var src device.Buffer = x
		base := n0 * p.C * g.hw
		if !g.pointwise {
			k.launch1D("im2col_"+sfx, cnt*g.ckk*g.ohw, col, x, s, int64(n0), int64(cnt))
			src, base = col, 0
		}
		yOff := n0 * p.OutC * g.ohw
		if cnt >= g.g {
			for gi := 0; gi < g.g; gi++ { // per group, over the chunk's images
				k.MatMul(device.MatMulParams{Batch: cnt, M: g.ocg, N: g.ohw, K: g.k, Alpha: 1,
					AOff: gi * g.ocg * g.k, AStride: 0,
					BOff: base + gi*g.k*g.ohw, BStride: g.ckk * g.ohw,
					COff: yOff + gi*g.ocg*g.ohw, CStride: p.OutC * g.ohw}, y, w, src)
			}
		} else {
			for i := 0; i < cnt; i++ { // per image, over the groups
				k.MatMul(device.MatMulParams{Batch: g.g, M: g.ocg, N: g.ohw, K: g.k, Alpha: 1,
					AOff: 0, AStride: g.ocg * g.k,
					BOff: base + i*g.ckk*g.ohw, BStride: g.k * g.ohw,
					COff: yOff + i*p.OutC*g.ohw, CStride: g.ocg * g.ohw}, y, w, src)
			}
		}
	}
	if bias != nil || act != device.ActNone {
		k.BiasAct(act, y, y, bias, p.N, p.OutC, g.ohw)
	}
}

// Conv2DGradInput computes dx from dy and w: the column matrix's gradient
// wᵀ·dy per group (cuBLAS), summed back into dx by col2im; depthwise
// convolutions by conv_dw_grad_input.
func (k *kernels) Conv2DGradInput(p device.ConvParams, dx, dy, w device.Buffer) {
	sfx := floatSuffix("Conv2DGradInput", dx)
	noHalf("Conv2DGradInput", dy, w)
	nx := p.N * p.C * p.H * p.W
	if nx == 0 {
		return
	}
	g := newConvGeom(p)
	if g.ohw == 0 || p.OutC == 0 {
		k.Fill(dx, nx, 0)
		return
	}
	s := newConvArg(p)
	if isDepthwise(p) {
		k.launch1D("conv_dw_grad_input_"+sfx, nx, dx, dy, w, s)
		return
	}
	nb := imagesPerChunk(p.N, g.ckk*g.ohw)
	var col *Buffer
	if !g.pointwise {
		if col = k.scratch(dx.DType(), nb*g.ckk*g.ohw); col == nil {
			return
		}
		defer col.Free()
	}
	for n0 := 0; n0 < p.N; n0 += nb {
		cnt := min(nb, p.N-n0)
		var dst device.Buffer = dx // the pointwise column matrix is dx
		base := n0 * p.C * g.hw
		if !g.pointwise {
			dst, base = col, 0
		}
		dyOff := n0 * p.OutC * g.ohw
		if cnt >= g.g {
			for gi := 0; gi < g.g; gi++ {
				k.MatMul(device.MatMulParams{Batch: cnt, M: g.k, N: g.ohw, K: g.ocg, TransA: true, Alpha: 1,
					AOff: gi * g.ocg * g.k, AStride: 0,
					BOff: dyOff + gi*g.ocg*g.ohw, BStride: p.OutC * g.ohw,
					COff: base + gi*g.k*g.ohw, CStride: g.ckk * g.ohw}, dst, w, dy)
			}
		} else {
			for i := 0; i < cnt; i++ {
				k.MatMul(device.MatMulParams{Batch: g.g, M: g.k, N: g.ohw, K: g.ocg, TransA: true, Alpha: 1,
					AOff: 0, AStride: g.ocg * g.k,
					BOff: dyOff + i*p.OutC*g.ohw, BStride: g.ocg * g.ohw,
					COff: base + i*g.ckk*g.ohw, CStride: g.k * g.ohw}, dst, w, dy)
			}
		}
		if !g.pointwise {
			k.launch1D("col2im_"+sfx, cnt*p.C*g.hw, dx, col, s, int64(n0), int64(cnt))
		}
	}
}

// Conv2DGradWeight computes dw from dy and x: per chunk of images, the
// products dy·colᵀ of every image (cuBLAS, batched) into a scratch
// partial per image, summed with the previous chunks' total into dw
// (reduce_cols_sum); depthwise convolutions by conv_dw_grad_weight.
func (k *kernels) Conv2DGradWeight(p device.ConvParams, dw, dy, x device.Buffer) {
	sfx := floatSuffix("Conv2DGradWeight", dw)
	noHalf("Conv2DGradWeight", dy, x)
	g := newConvGeom(p)
	nw := p.OutC * g.k
	if nw == 0 {
		return
	}
	if p.N == 0 || g.ohw == 0 {
		k.Fill(dw, nw, 0)
		return
	}
	s := newConvArg(p)
	if isDepthwise(p) {
		k.launchSliced("conv_dw_grad_weight_"+sfx, sfx, dw, nw, p.N*g.ohw, dy, x, s)
		return
	}
	colPer := g.ckk * g.ohw
	if g.pointwise {
		colPer = 0
	}
	nb := imagesPerChunk(p.N, colPer+nw)
	dt := dw.DType()
	var col, part *Buffer
	if !g.pointwise {
		if col = k.scratch(dt, nb*colPer); col == nil {
			return
		}
		defer col.Free()
	}
	if nb > 1 {
		// Slot 0 holds the previous chunks' sum, slots 1..cnt the chunk's images.
		if part = k.scratch(dt, (nb+1)*nw); part == nil {
			return
		}
		defer part.Free()
	}
	for n0 := 0; n0 < p.N; n0 += nb {
		cnt := min(nb, p.N-n0)
		var src device.Buffer = x
		base := n0 * p.C * g.hw
		if !g.pointwise {
			k.launch1D("im2col_"+sfx, cnt*colPer, col, x, s, int64(n0), int64(cnt))
			src, base = col, 0
		}
		dyOff := n0 * p.OutC * g.ohw
		if part == nil { // one image at a time: accumulate into dw with Beta
			beta := 1.0
			if n0 == 0 {
				beta = 0
			}
			k.MatMul(device.MatMulParams{Batch: g.g, M: g.ocg, N: g.k, K: g.ohw, TransB: true, Alpha: 1, Beta: beta,
				AOff: dyOff, AStride: g.ocg * g.ohw,
				BOff: base, BStride: g.k * g.ohw,
				COff: 0, CStride: g.ocg * g.k}, dw, dy, src)
			continue
		}
		slots := cnt
		first := 1
		if n0 > 0 {
			k.memcpy(part, 0, k.buf(dw), 0, nw)
			slots, first = cnt+1, 0
		}
		if cnt >= g.g {
			for gi := 0; gi < g.g; gi++ {
				k.MatMul(device.MatMulParams{Batch: cnt, M: g.ocg, N: g.k, K: g.ohw, TransB: true, Alpha: 1,
					AOff: dyOff + gi*g.ocg*g.ohw, AStride: p.OutC * g.ohw,
					BOff: base + gi*g.k*g.ohw, BStride: g.ckk * g.ohw,
					COff: nw + gi*g.ocg*g.k, CStride: nw}, part, dy, src)
			}
		} else {
			for i := 0; i < cnt; i++ {
				k.MatMul(device.MatMulParams{Batch: g.g, M: g.ocg, N: g.k, K: g.ohw, TransB: true, Alpha: 1,
					AOff: dyOff + i*p.OutC*g.ohw, AStride: g.ocg * g.ohw,
					BOff: base + i*g.ckk*g.ohw, BStride: g.k * g.ohw,
					COff: (1 + i) * nw, CStride: g.ocg * g.k}, part, dy, src)
			}
		}
		// dw = Σ of the slots [first, first+slots).
		k.reduceSum(sfx, dw, part.view(first*nw, slots*nw), 1, slots, nw)
	}
}

package cpu

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// Constant convolution weights in bands of rows. A GEMM through im2col
// reads its weights, op(A), a row per output channel; the small kernels
// broadcast one element of each of a tile's mr rows per k step, mr
// streams ck·4 bytes apart. When the weights come from memory (an
// inference at batch 1 reads each layer's weights once), the hardware
// prefetcher does not follow that many streams: mobilenet_v2's 160→960 1×1
// layer on a 7×7 plane took 112–120 µs on one Zen 5 core with its weights
// out of cache, against 76–77 with them in L1. Laid out as bands of mr
// rows, each band k-major (the mr values of a k step side by side), a
// tile's weights are one contiguous stream, which the kernels prefetch:
// 86–87 µs (BenchmarkColdA in package gemm).

// weightPanels returns the weights w (OutC × ck, ck = C/Groups·KH·KW) of
// the float32 convolution s in bands of mr rows from the start of each
// group, band b of group g holding w[g·ocg+b·mr+i][p] at
// g·ocg·ck + b·mr·ck + p·rows + i (rows the band's height: mr, or what
// is left of the group), kept with wb once computed. It returns nil (and
// the convolution reads w itself) unless wb is constant, the weights are
// float32 and every float32 product runs Hora's vector kernel with bands
// of 8 rows or more (the same bits either way: its kernels compute op(A)
// alike whatever its layout; conv2dSplit's blocks of channels are then
// whole bands).
func weightPanels[T float](dev *Device, s convShape, w []T, wb *Buffer) (panels []float32, held heldForm) {
	w32, ok := any(w).([]float32)
	mr := keptBandRows(dev, wb)
	if !ok || mr == 0 || len(w32) < s.OutC*s.ckk {
		return nil, heldForm{}
	}
	key := derivedKey{kind: bandedWeights, outC: s.OutC, inC: s.ckk, taps: mr, alt: s.Groups}
	return derived(wb, key, s.OutC*s.ckk, func(p []float32) {
		for g := range s.Groups {
			toBands(p[g*s.wGroup:], w32[g*s.wGroup:], s.ocg, s.ckk, mr)
		}
	})
}

// keptBandRows is the height of the bands of rows in which forms derived
// from the constant weight buffer wb are kept (weightPanels, Winograd's
// transformed filters), or 0 where they are not: wb is not constant, a
// float32 product may run a BLAS library (which reads A as stored), or
// Hora's tile has fewer than 8 rows.
func keptBandRows(dev *Device, wb *Buffer) int {
	mr := gemm.Blocking().MR
	if !wb.keepsForms() || !dev.ownKernelOnly() || mr < 8 {
		return 0
	}
	return mr
}

// toBands writes the m×k row-major matrix src into dst in bands of mr
// rows, each band k-major: row b0+i, column q of band b0 at b0·k + q·rows
// + i, rows the band's height (mr, or what is left of the matrix).
func toBands(dst, src []float32, m, k, mr int) {
	for b0 := 0; b0 < m; b0 += mr {
		rows := min(mr, m-b0)
		band := dst[b0*k:][:rows*k]
		for i := range rows {
			for q, v := range src[(b0+i)*k:][:k] {
				band[q*rows+i] = v
			}
		}
	}
}

// groupPanels returns the bands of group g from its row i0 (a multiple of
// the band height) on, or nil without panels.
func groupPanels(panels []float32, s convShape, g, i0 int) []float32 {
	return offset(panels, g*s.wGroup+i0*s.ckk)
}

// panelProduct is convProduct with the weights in bands (see
// weightPanels): rows [oc0, oc0+m) of the output channels, m·k weights
// from panels on, one gemm.SgemmBands (every band of rows over a strip of
// the column matrix before the next strip, when that matrix is larger
// than L2), with the bias and activation applied to its tiles, or, with a
// residual res (rows ldo apart, like out's), the bias to its tiles and
// the residual and activation to the rows once they are written.
func panelProduct(act device.Activation, bias []float32, oc0, m, n, k int, panels, col []float32, ldb int, out []float32, ldo int, res []float32) {
	bandAct := act // what the tiles get: with a residual, the activation follows it
	if res != nil {
		bandAct = device.ActNone
	}
	lo, hi := clampOf(bandAct)
	ws := workspaces.Get().(*gemm.Workspace)
	defer workspaces.Put(ws)
	var e gemm.Epilogue
	if bias != nil {
		e = gemm.Epilogue{Bias: bias[oc0 : oc0+m], Lo: lo, Hi: hi}
	}
	if done := gemm.SgemmBands(ws, m, n, k, panels, col, ldb, out, ldo, e); !done || bias == nil {
		convEpilogue(bandAct, bias, out, ldo, m, oc0, 0, n)
	}
	if res != nil {
		residualRows(act, out, res, ldo, m, n)
	}
}

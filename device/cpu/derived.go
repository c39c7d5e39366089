package cpu

import (
	"sync"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// Forms derived from constant buffers. A model's weights at inference
// never change, yet the Winograd and direct convolutions transform or
// pack their filters on every call (3% of resnet18's time at batch 1).
// Once a buffer is marked constant (Device.MarkConstant, which
// tensor.MarkConstant and the ONNX importer's constants call), derived
// computes each form once and keeps it with the buffer.

// derivedKey names a form: the kernel layout it is in and the convolution
// shape it was made for.
type derivedKey struct {
	kind                 derivedKind
	outC, inC, taps, alt int
}

// derivedKind is the layout of a derived form.
type derivedKind int

const (
	winogradFilters  derivedKind = iota + 1 // winoFilterArgs's Matrices·OutC·C transformed filters (taps = Matrices)
	directFilters                           // directGeom.packFilters's blocks
	packedMatrix                            // packedWeight's panels of op(B) (outC = N, inC = K, alt = 1 when B is read transposed)
	bandedWeights                           // weightPanels' bands of rows (inC = a group's columns, taps = rows per band)
	channelsLastTaps                        // a depthwise convolution's weights tap-major for depthwiseChannelsLast (outC = channels, taps = KH·KW)
	vecFilters                              // packFilterBlocks's blocks of VecRows output channels (vecFilterBlocks)
)

// derivedForms are the forms derived from one constant buffer.
type derivedForms struct {
	mu    sync.Mutex
	forms map[derivedKey][]float32
}

// drop forgets every form (the buffer's values are about to change); f may
// be nil.
func (f *derivedForms) drop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	clear(f.forms)
	f.mu.Unlock()
}

// MarkConstant implements device.ConstantMarker: b's values never change
// from now on (Write still may, dropping the forms derived from them).
// Buffers of other devices are ignored.
func (d *Device) MarkConstant(b device.Buffer) {
	if cb, ok := b.(*Buffer); ok && cb.forms == nil {
		cb.forms = &derivedForms{forms: map[derivedKey][]float32{}}
	}
}

// keepsForms reports whether b is a constant buffer, which keeps the forms
// derived from it (b may be nil).
func (b *Buffer) keepsForms() bool { return b != nil && b.forms != nil }

// derived returns the form key of the weights held by wb, n floats that
// fill computes: when wb is constant, computed on the first call and kept
// with wb (callers may read it concurrently, never write it); otherwise
// computed into scratch on every call, which the caller gives back with
// held.release.
func derived(wb *Buffer, key derivedKey, n int, fill func(form []float32)) (form []float32, held heldForm) {
	if !wb.keepsForms() {
		sc := getScratch[float32](n)
		fill(sc.s)
		return sc.s, heldForm{sc}
	}
	f := wb.forms
	f.mu.Lock()
	defer f.mu.Unlock()
	if form, ok := f.forms[key]; ok && len(form) == n {
		return form, heldForm{}
	}
	form = make([]float32, n)
	fill(form)
	f.forms[key] = form
	return form, heldForm{}
}

// heldForm is the scratch buffer of a derived form computed for one call
// (nil for a kept one). A value, not a closure, so that a training step's
// calls allocate nothing for it.
type heldForm struct{ sc *scratch[float32] }

// release gives the scratch buffer back, if there is one.
func (h heldForm) release() {
	if h.sc != nil {
		putScratch(h.sc)
	}
}

// packedWeight returns, for a float32 product whose B is a whole constant
// buffer (a Linear layer's weight at inference, or a MatMul's constant
// operand), its op(B) packed once (packedOperand). Only where the product
// runs Hora's vector kernel, which gives the same bits from the panels (a
// BLAS library reads B as stored).
func packedWeight(d *Device, p device.MatMulParams, b *Buffer) ([]float32, bool) {
	if p.Batch != 1 || !b.keepsForms() || p.BOff != 0 || len(b.f32) != p.N*p.K || d.Float32GEMM(p.TransA, p.TransB, p.M, p.N, p.K) != "hora" {
		return nil, false
	}
	return packedOperand(b, p.TransB, p.K, p.N), true
}

// packedOperand returns op(B) (k×n; the constant buffer b holds B, n×k
// when transB) packed into the micro-panels Hora's kernel reads
// (gemm.PackB) and kept with b, so that no product repacks it or reads it
// a row's stride apart: a Linear weight (packedWeight) and a convolution's
// filters read positions-major (conv2dPositionsMajor) share the form.
func packedOperand(b *Buffer, transB bool, k, n int) []float32 {
	pb, _ := packedForm(b, transB, k, n) // kept with b: nothing to release
	return pb
}

// packedForm is packedOperand for any buffer b: with b not constant, op(B)
// is packed into scratch that held.release gives back.
func packedForm(b *Buffer, transB bool, k, n int) (pb []float32, held heldForm) {
	key := derivedKey{kind: packedMatrix, outC: n, inC: k}
	ldb := n
	if transB {
		key.alt, ldb = 1, k
	}
	return derived(b, key, gemm.PackedBSize(k, n), func(pb []float32) {
		gemm.PackB(pb, transB, b.f32, ldb, k, n)
	})
}

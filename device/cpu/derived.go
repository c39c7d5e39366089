package cpu

import (
	"sync"

	"github.com/hora-dl/hora/device"
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
	winogradFilters  derivedKind = iota + 1 // winoFilterArgs's 16·OutC·C transformed filters
	directFilters                           // directGeom.packFilters's blocks
	transposedMatrix                        // storedAsRead's Bᵀ (outC = N rows of B, inC = K)
	bandedWeights                           // weightPanels' bands of rows (inC = a group's columns, taps = rows per band)
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
// computed into scratch on every call. release gives the scratch back.
func derived(wb *Buffer, key derivedKey, n int, fill func(form []float32)) (form []float32, release func()) {
	if !wb.keepsForms() {
		sc := getScratch[float32](n)
		fill(sc.s)
		return sc.s, func() { putScratch(sc) }
	}
	f := wb.forms
	f.mu.Lock()
	defer f.mu.Unlock()
	if form, ok := f.forms[key]; ok && len(form) == n {
		return form, func() {}
	}
	form = make([]float32, n)
	fill(form)
	f.forms[key] = form
	return form, func() {}
}

// storedAsRead returns, for a product whose B is a whole constant buffer
// read transposed (a Linear layer's weight at inference, N×K), the same
// product with Bᵀ stored as it is read: transposed once and kept with the
// buffer, so that a product of a few rows reads it in place instead of
// repacking the whole weight on every call. Only where every float32
// product runs Hora's vector kernel, which gives the same bits either way
// (it computes op(B) alike whatever its layout; a BLAS library need not).
func storedAsRead(d *Device, p device.MatMulParams, b *Buffer) (device.MatMulParams, []float32, bool) {
	if !p.TransB || p.Batch != 1 || b.forms == nil || p.BOff != 0 || len(b.f32) != p.N*p.K || !d.ownKernelOnly() {
		return p, nil, false
	}
	key := derivedKey{kind: transposedMatrix, outC: p.N, inC: p.K}
	bt, _ := derived(b, key, p.N*p.K, func(bt []float32) {
		// Bᵀ (K×N) from B (N×K) read as a K×N view, by the strided copy.
		copyStrided(d, bt, device.Layout{Shape: []int{p.K, p.N}, Strides: []int{p.N, 1}},
			b.f32, device.Layout{Shape: []int{p.K, p.N}, Strides: []int{1, p.K}})
	})
	p.TransB = false
	return p, bt, true
}

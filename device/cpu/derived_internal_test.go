package cpu

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cpu/internal/direct"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
)

// TestConstantFiltersKept checks that the Winograd (both algorithms) and
// direct convolutions keep the filters they derive from a constant weight
// buffer (the Winograd ones in bands of rows), give the same bits as when
// they derive them on every call, concurrently too, and derive them again
// once the buffer is written.
func TestConstantFiltersKept(t *testing.T) {
	if !useWinograd(newConvShape(convCase(2, 64, 16, 16, 64, 3, 1, 1, 1)), false) || !direct.Fast() {
		t.Skip("no vector Winograd or direct kernel on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	dev := New()
	k := dev.Kernels().(kernels)
	for _, tc := range []struct {
		name string
		p    device.ConvParams
		kind derivedKind
	}{
		{"winogradF2", convCase(2, 64, 16, 16, 64, 3, 1, 1, 1), winogradFilters},
		{"winogradF4", convCase(8, 64, 16, 16, 64, 3, 1, 1, 1), winogradFilters},
		{"direct", convCase(2, 16, 12, 12, 16, 3, 1, 1, 1), directFilters},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newConvShape(tc.p)
			x := dev.bufferOf(randSlice(rng, s.N*s.imgIn))
			w := dev.bufferOf(randSlice(rng, s.OutC*s.ckk))
			conv := func() []float32 {
				y := dev.bufferOf(make([]float32, s.N*s.imgOut))
				k.Conv2DBiasAct(tc.p, device.ActReLU, y, x, w, nil)
				plain := dev.bufferOf(make([]float32, s.N*s.imgOut))
				k.Conv2D(tc.p, plain, x, w) // the kernel without bias keeps the same forms
				for i, v := range plain.f32 {
					if max(v, 0) != y.f32[i] {
						t.Fatalf("Conv2D and Conv2DBiasAct differ at %d", i)
					}
				}
				return y.f32
			}
			want := conv() // filters derived on the call
			dev.MarkConstant(w)
			if got := conv(); !slices.Equal(got, want) {
				t.Fatal("the first call on a constant buffer differs")
			}
			if n := formsOf(w, tc.kind); n != 1 {
				t.Fatalf("%d %v forms kept, want 1", n, tc.kind)
			}
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if got := conv(); !slices.Equal(got, want) {
						t.Error("a call with the kept filters differs")
					}
				}()
			}
			wg.Wait()

			// New values through Write, then through Copy: the kept
			// filters are dropped and derived from the new values.
			for _, write := range []func(v []float32){
				func(v []float32) { dev.Write(w, v) },
				func(v []float32) {
					l := device.Layout{Shape: []int{len(v)}, Strides: []int{1}}
					k.Copy(w, l, dev.bufferOf(v), l)
				},
			} {
				write(randSlice(rng, len(w.f32)))
				if n := formsOf(w, tc.kind); n != 0 {
					t.Fatalf("%d forms kept after a write, want 0", n)
				}
				fresh := dev.bufferOf(slices.Clone(w.f32))
				y := dev.bufferOf(make([]float32, s.N*s.imgOut))
				k.Conv2DBiasAct(tc.p, device.ActReLU, y, x, fresh, nil)
				if got := conv(); !slices.Equal(got, y.f32) {
					t.Fatal("after a write, the convolution used the old filters")
				}
			}
		})
	}
}

// TestConstantWeightPackedOnce checks that a product reading a whole
// constant B (a Linear layer's weight, read transposed; a MatMul's
// operand, read as stored) packs op(B) once and keeps it, gives the same
// bits as with B unpacked on every call, for one row, for a few (split by
// columns) and for many (split by rows, the packed path), and reads the
// new values after a write.
func TestConstantWeightPackedOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dev := New()
	if !dev.ownKernelOnly() {
		t.Skip("float32 products may run a BLAS library or gonum: the weight is read as it is")
	}
	defer func(v int) { serialGemmMax = v }(serialGemmMax)
	serialGemmMax = 0 // split every product across the workers
	k := dev.Kernels().(kernels)
	const n, kk = 77, 450 // several panels, two k blocks
	for _, transB := range []bool{true, false} {
		w := dev.bufferOf(randSlice(rng, n*kk))
		product := func(m int, x, w *Buffer) []float32 {
			y := dev.bufferOf(make([]float32, m*n))
			k.MatMul(device.MatMulParams{Batch: 1, M: m, N: n, K: kk, TransB: transB, Alpha: 1}, y, x, w)
			return y.f32
		}
		for _, m := range []int{1, 3, 40, 300} {
			x := dev.bufferOf(randSlice(rng, m*kk))
			plain := dev.bufferOf(slices.Clone(w.f32))
			want := product(m, x, plain)
			dev.MarkConstant(w)
			if got := product(m, x, w); !slices.Equal(got, want) {
				t.Errorf("transB=%v m=%d: the product with the packed weight differs", transB, m)
			}
			if n := formsOf(w, packedMatrix); n != 1 {
				t.Errorf("transB=%v m=%d: %d packed forms kept, want 1", transB, m, n)
			}
			dev.Write(w, randSlice(rng, n*kk))
			if got, want := product(m, x, w), product(m, x, dev.bufferOf(slices.Clone(w.f32))); !slices.Equal(got, want) {
				t.Errorf("transB=%v m=%d: after a write, the product used the old weight", transB, m)
			}
		}
	}
}

// formsOf counts the forms of kind kept with b.
func formsOf(b *Buffer, kind derivedKind) int {
	b.forms.mu.Lock()
	defer b.forms.mu.Unlock()
	n := 0
	for key := range b.forms.forms {
		if key.kind == kind {
			n++
		}
	}
	return n
}

func (d *Device) bufferOf(v []float32) *Buffer { return &Buffer{dev: d, dt: device.Float32, f32: v} }

// TestWeightPanelsSameBits checks that convolutions through im2col with
// constant weights, which read them in bands (weightPanels), give the
// bits of the same convolution reading the weights as they are: one image
// split by channels and by positions, a batch of one image per GEMM,
// groups, bands cut short, with and without bias and activation.
func TestWeightPanelsSameBits(t *testing.T) {
	dev := New()
	if !dev.ownKernelOnly() || gemm.Blocking().MR < 8 {
		t.Skip("float32 products do not all run Hora's vector kernel here")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	k := dev.Kernels().(kernels)
	for _, p := range []device.ConvParams{
		convCase(1, 16, 7, 7, 150, 1, 1, 0, 1),  // by channels: 49 positions, 150 channels
		convCase(1, 24, 14, 14, 20, 1, 1, 0, 1), // by positions
		convCase(3, 16, 9, 9, 45, 1, 1, 0, 1),   // one image per GEMM
		convCase(1, 8, 10, 10, 72, 3, 1, 1, 1),  // 3×3 through im2col, split
		convCase(2, 12, 8, 8, 60, 1, 1, 0, 3),   // groups of 20 channels
		convCase(1, 6, 12, 12, 90, 3, 2, 1, 2),
	} {
		s := newConvShape(p)
		x := dev.bufferOf(randSlice(rng, s.N*s.imgIn))
		bias := dev.bufferOf(randSlice(rng, s.OutC))
		for _, tc := range []struct {
			act  device.Activation
			bias *Buffer
		}{{device.ActNone, nil}, {device.ActReLU6, bias}, {device.ActReLU, nil}} {
			w := dev.bufferOf(randSlice(rng, s.OutC*s.ckk))
			conv := func() []float32 {
				y := dev.bufferOf(make([]float32, s.N*s.imgOut))
				var b device.Buffer
				if tc.bias != nil {
					b = tc.bias
				}
				k.Conv2DBiasAct(p, tc.act, y, x, w, b)
				return y.f32
			}
			want := conv()
			dev.MarkConstant(w)
			if got := conv(); !slices.Equal(got, want) {
				t.Fatalf("%+v, %v, bias %v: the bands give other bits", p, tc.act, tc.bias != nil)
			}
			if n := formsOf(w, bandedWeights); n != 1 {
				t.Fatalf("%+v: %d banded forms kept, want 1", p, n)
			}
		}
	}
}

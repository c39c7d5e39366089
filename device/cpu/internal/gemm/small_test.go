package gemm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallKernels returns the kernels that have a small-product path.
func smallKernels() []*kernelInfo {
	var ks []*kernelInfo
	for _, k := range kernels {
		if k.small != nil {
			ks = append(ks, k)
		}
	}
	return ks
}

// runPath runs d's product through the given path on a fresh copy of C and
// returns C's buffer.
func runPath(d *gemmData, ws *Workspace, path int) []float32 {
	saved := forcePath
	defer func() { forcePath = saved }()
	forcePath = path
	cbuf := d.cbuf
	d.cbuf = slices.Clone(cbuf)
	defer func() { d.cbuf = cbuf }()
	d.run(ws)
	return d.cbuf
}

// TestSmallMatchesPacked: on shapes around the tile sizes, in all four
// layouts and with every alpha/beta pair, the small path gives the packed
// path's result bit for bit (and both the float64 reference's within
// float32 rounding), sentinels around C untouched.
func TestSmallMatchesPacked(t *testing.T) {
	ks := smallKernels()
	if len(ks) == 0 {
		t.Skip("no kernel with a small path on this CPU")
	}
	defer setKernel(kernels[0].name)
	sizes := []int{1, 2, 15, 16, 17, 24, 31, 33} // 17 and 24 columns: the AVX-512 kernels 24 wide
	for _, kern := range ks {
		require.True(t, setKernel(kern.name))
		rng := rand.New(rand.NewPCG(21, 22))
		var ws Workspace
		i := 0
		for _, tr := range transCombos {
			for _, m := range sizes {
				for _, n := range sizes {
					for _, k := range sizes {
						ab := alphaBetas[i%len(alphaBetas)]
						tc := gemmCase{transA: tr[0], transB: tr[1], m: m, n: n, k: k,
							alpha: ab[0], beta: ab[1], padA: i % 3, padB: i % 2 * 5, padC: i % 4}
						i++
						d := newGemmData(rng, tc)
						packed := runPath(d, &ws, pathPacked)
						small := runPath(d, &ws, pathSmall)
						if !slices.Equal(packed, small) {
							t.Fatalf("%s %v: small path differs from packed path", kern.name, tc)
						}
						d.cbuf = small
						d.check(t)
					}
				}
			}
		}
	}
}

// TestSmallKBlocks: when k spans several k blocks, the small path splits
// it as the packed path does (and gives its bits), with the kernel's
// blocking and with a tiny kc.
func TestSmallKBlocks(t *testing.T) {
	ks := smallKernels()
	if len(ks) == 0 {
		t.Skip("no kernel with a small path on this CPU")
	}
	defer setKernel(kernels[0].name)
	for _, kern := range ks {
		require.True(t, setKernel(kern.name))
		saved := *kern
		rng := rand.New(rand.NewPCG(23, 24))
		var ws Workspace
		for _, kc := range []int{kern.kc, 7} {
			kern.kc = kc
			for i, tr := range transCombos {
				for _, sz := range [][3]int{{10, 37, 2*kern.kc + 3}, {29, 10, 3*kc + 1}, {15, 40, 1000}} {
					tc := gemmCase{transA: tr[0], transB: tr[1], m: sz[0], n: sz[1], k: sz[2],
						alpha: -0.5, beta: float32(i%2) * 0.3, padA: 1, padB: 2, padC: 3}
					d := newGemmData(rng, tc)
					packed := runPath(d, &ws, pathPacked)
					small := runPath(d, &ws, pathSmall)
					require.True(t, slices.Equal(packed, small), "%s kc=%d %v: small path differs from packed path", kern.name, kc, tc)
					d.cbuf = small
					d.check(t)
				}
			}
		}
		*kern = saved
	}
}

// TestUseSmall checks the rule with this machine's blocking (kc = 384,
// nc = 352: op(B)'s k block must fit in 135,168 floats) on the MLP's
// products and on others.
func TestUseSmall(t *testing.T) {
	kern := &kernelInfo{name: "test", mr: 14, nr: 32, kc: 384, mc: 4088, nc: 352,
		small: func(int, []float32, int, int, []float32, int, int, []float32, int, float32, float32, int, int, Epilogue) {
		}}
	for _, tc := range []struct {
		name           string
		transA, transB bool
		m, n, k        int
		want           bool
	}{
		// the MLP 784-512-256-10 at batch 128, in its layouts
		{"fwd 128x256x10", false, true, 128, 10, 256, true},
		{"dX 128x10x256", false, false, 128, 256, 10, true},
		{"dW 10x128x256", true, false, 10, 256, 128, true},
		{"fwd 128x784x512", false, true, 128, 512, 784, true}, // 262·512 floats
		{"fwd 128x512x256", false, true, 128, 256, 512, true}, // 256·256
		{"dX 128x256x512", false, false, 128, 512, 256, true}, // 256·512
		{"dW 512x128x784", true, false, 512, 784, 128, true},  // 128·784
		{"sgemm 256", false, false, 256, 256, 256, true},
		{"sgemm 512", false, false, 512, 512, 512, true},      // 256·512
		{"sgemm 1024", false, false, 1024, 1024, 1024, false}, // 342·1024
		{"sgemm 2048", false, false, 2048, 2048, 2048, false},
		{"narrow transposed B", false, true, 2048, 16, 2048, true},
		{"wide transposed B, one row band", false, true, 14, 2048, 512, false},
		{"transposed B just too wide", false, true, 128, 544, 784, false}, // 262·544
		{"one row band: B read once", false, false, 5, 8192, 4096, true},
		{"B's k block beyond L2, 8 row bands", false, false, 100, 8192, 4096, false},
		{"rows of A 4 KiB apart", false, false, 2048, 256, 2048, false},
		{"rows of A 4 KiB apart, A transposed", true, false, 2048, 256, 2048, true},
		{"rows of A 4 KiB apart, one strip", false, false, 256, 32, 1024, true},
		{"rows of A 4 KiB apart, one band", false, false, 10, 256, 1024, true},
		{"rows of B 4 KiB apart", true, false, 784, 1024, 128, false},
		{"rows of B 4 KiB apart, one band", true, false, 14, 1024, 128, true},
		{"rows of B 2 KiB apart, 14-row tiles", true, false, 784, 512, 128, true},
	} {
		lda := tc.k
		if tc.transA {
			lda = tc.m
		}
		ldb := tc.n
		if tc.transB {
			ldb = tc.k
		}
		got := useSmall(kern, tc.transA, tc.transB, tc.m, tc.n, tc.k, lda, ldb)
		assert.Equal(t, tc.want, got, tc.name)
	}
	// B as a narrow view of a wider matrix: its k block spans kb rows of
	// ldb floats.
	assert.False(t, useSmall(kern, false, false, 1000, 64, 432, 432, 4096), "narrow view of a wide B")
	assert.True(t, useSmall(kern, false, false, 1000, 64, 432, 432, 64), "narrow dense B")
	// AVX2's 6×16 tiles: rows of B 2 KiB apart go to the packed path too.
	avx2 := *kern
	avx2.mr, avx2.nr, avx2.nc = 6, 16, 336
	assert.False(t, useSmall(&avx2, true, false, 784, 512, 128, 784, 512), "rows of B 2 KiB apart, 6-row tiles")
	assert.True(t, useSmall(&avx2, true, false, 784, 520, 128, 784, 520), "rows of B 2080 bytes apart, 6-row tiles")
	kern.small = nil
	assert.False(t, useSmall(kern, false, false, 1, 1, 1, 1, 1), "no small path without a small kernel")
}

// TestSmallBandPanics: the small kernels refuse arguments that would make
// the assembly read or write outside the slices.
func TestSmallBandPanics(t *testing.T) {
	ks := smallKernels()
	if len(ks) == 0 {
		t.Skip("no kernel with a small path on this CPU")
	}
	s := func(n int) []float32 { return make([]float32, n) }
	for _, kern := range ks {
		nr := kern.nr
		// nr+1 columns of B packed in strips of nr (k steps nr apart,
		// column j's strip at j·kc): strip 1 at nr·2, read to nr·2+nr+1.
		kern.small(2, s(4), 1, 1, s(3*nr+1), nr, 2, s(2*(nr+1)), nr+1, 1, 0, 2, nr+1, Epilogue{}) // fits
		for i, call := range []func(){
			func() { kern.small(0, s(4), 1, 1, s(4), 4, 1, s(4), 4, 1, 0, 1, 1, Epilogue{}) },                   // kc
			func() { kern.small(2, s(4), 1, 1, s(8), 4, 1, s(4), 4, 1, 0, kern.mr+1, 1, Epilogue{}) },           // rows
			func() { kern.small(2, s(4), 1, 1, s(8), 4, 1, s(4), 4, 1, 0, 1, 0, Epilogue{}) },                   // no columns
			func() { kern.small(2, s(4), 4, 2, s(8), 4, 1, s(8), 4, 1, 0, 2, 4, Epilogue{}) },                   // short a: needs 4+2+1
			func() { kern.small(2, s(8), 4, 1, s(7), 4, 1, s(8), 4, 1, 0, 2, 4, Epilogue{}) },                   // short b: needs 4+4
			func() { kern.small(2, s(8), 4, 1, s(8), 4, 1, s(7), 4, 1, 0, 2, 4, Epilogue{}) },                   // short c: needs 4+4
			func() { kern.small(2, s(8), 4, 1, s(8), 3, 1, s(8), 4, 1, 0, 2, 4, Epilogue{}) },                   // bks < cols
			func() { kern.small(2, s(8), 4, 1, s(8), 4, 1, s(8), 3, 1, 0, 2, 4, Epilogue{}) },                   // ldc < cols
			func() { kern.small(2, s(8), 4, 1, s(8), 4, -1, s(8), 4, 1, 0, 2, 4, Epilogue{}) },                  // bjs < 0
			func() { kern.small(2, s(4), 1, 1, s(2*nr), nr, nr, s(2*(nr+1)), nr+1, 1, 0, 2, nr+1, Epilogue{}) }, // short second strip
			func() {
				kern.small(2, s(4), 1, 1, s(2*nr+1), nr, nr, s(2*(nr+1)), nr+1, 1, 0, 2, nr+1, Epilogue{Bias: s(1)})
			}, // short bias
		} {
			assert.Panics(t, call, fmt.Sprintf("%s: case %d", kern.name, i))
		}
	}
}

//go:build amd64 && !noasm

package direct

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAVX2MatchesAVX512 requires the AVX2 kernels, which CPUs without
// AVX-512 run, to give the AVX-512 kernels' bits (the same multiply-adds
// in the same order, the lanes of a GradBlock sum added in the same tree),
// on a machine that has both.
func TestAVX2MatchesAVX512(t *testing.T) {
	if !haveAsm || !haveAVX2 {
		t.Skip("this CPU lacks AVX-512 or AVX2")
	}
	r := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = r.Float32()*2 - 1
		}
		return v
	}
	same := func(what string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s [%d]: AVX-512 %v, AVX2 %v", what, i, a[i], b[i])
			}
		}
	}
	in := fill(2000)

	taps := []int{0, 5, 9, 130}
	w := fill(3 * len(taps) * Rows)
	b1, b2 := make([]float32, Rows*60), make([]float32, Rows*60)
	blockAVX512(&b1[0], 60, &in[0], 300, &taps[0], len(taps), &w[0], 3)
	blockAVX2(&b2[0], 60, &in[0], 300, &taps[0], len(taps), &w[0], 3, Cols)
	same("Block", b1, b2)
	// The first 24 positions only: the others keep their NaNs.
	for i := range b2 {
		b2[i] = float32(math.NaN())
	}
	blockAVX2(&b2[0], 60, &in[0], 300, &taps[0], len(taps), &w[0], 3, 24)
	for r := range Rows {
		same("Block of 24 positions", b1[r*60:r*60+24], b2[r*60:r*60+24])
		for q := 24; q < 60; q++ {
			if v := b2[r*60+q]; !math.IsNaN(float64(v)) {
				t.Fatalf("Block of 24 positions wrote [%d][%d] = %v", r, q, v)
			}
		}
	}

	// 160 positions: part of one of the AVX2 kernel's chunks; 1040: two
	// chunks of 512 and a part.
	for _, n := range []int{160, 1040} {
		ldy := n + 10
		dy := fill(3*ldy + n)
		offs := [GradCols]int{0, 3, 17, 50, 100, 200}
		var g1, g2 [GradRows * GradCols]float64
		gradBlockAVX512(&g1, &dy[0], ldy, &in[0], &offs, n)
		gradBlockAVX2(&g2, &dy[0], ldy, &in[0], &offs, n)
		for i := range g1 {
			if math.Float64bits(g1[i]) != math.Float64bits(g2[i]) {
				t.Fatalf("GradBlock n %d [%d]: AVX-512 %v, AVX2 %v", n, i, g1[i], g2[i])
			}
		}
	}

	d1, d2 := make([]float32, 176), make([]float32, 176)
	depthwiseAVX512(&d1[0], &in[0], &taps[0], len(taps), &w[0], 176, 0.25, 0, 1.5)
	depthwiseAVX2(&d2[0], &in[0], &taps[0], len(taps), &w[0], 176, 0.25, 0, 1.5)
	same("Depthwise", d1, d2)

	const channels, n = 40, 11
	inOff, wOff := []int{0, 45, 90}, []int{0, channels, 2 * channels}
	wc, bias := fill(3*channels), fill(channels)
	c1, c2 := make([]float32, n*channels), make([]float32, n*channels)
	rowChannelsLastAVX512(&c1[0], &in[0], &wc[0], &bias[0], &inOff[0], &wOff[0], len(inOff), n, channels, channels, channels, -0.5, 0.5)
	rowChannelsLastAVX2(&c2[0], &in[0], &wc[0], &bias[0], &inOff[0], &wOff[0], len(inOff), n, channels, channels, channels, -0.5, 0.5)
	same("RowChannelsLast", c1, c2)
}

package gemmchoice

import (
	"strings"
	"testing"
	"time"
)

func TestClassOf(t *testing.T) {
	for _, c := range []struct {
		transA, transB bool
		m, n, k        int
		want           Class
	}{
		{false, false, 128, 128, 128, Small},
		{false, true, 128, 10, 256, Small},
		{true, false, 10, 256, 128, Small},
		{false, false, 129, 128, 128, Large},
		{true, false, 129, 128, 128, Transposed},
		{true, true, 4096, 64, 4096, Transposed},
		{false, false, 4096, 64, 4096, Skinny},
		{false, true, 4096, 64, 4096, Narrow},
		{false, true, 4096, 65, 4096, Large},
		{false, false, 65, 4096, 4096, Large},
		{false, true, 64, 4096, 4096, Skinny},
		{false, true, 144, 16, 1568, Narrow},
		{false, false, 1, 1 << 30, 1 << 30, Skinny}, // no overflow
	} {
		if got := ClassOf(c.transA, c.transB, c.m, c.n, c.k); got != c.want {
			t.Errorf("ClassOf(%v, %v, %d, %d, %d) = %v, want %v", c.transA, c.transB, c.m, c.n, c.k, got, c.want)
		}
	}
	for cl, ps := range probes {
		for _, p := range ps {
			if got := ClassOf(p.transA, p.transB, p.m, p.n, p.k); got != Class(cl) {
				t.Errorf("probe %dx%dx%d of class %v is in class %v", p.m, p.k, p.n, Class(cl), got)
			}
		}
	}
}

// naive is a correct reference Impl.
func naive(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float32
			for p := range k {
				var ai, bj float32
				if transA {
					ai = a[p*lda+i]
				} else {
					ai = a[i*lda+p]
				}
				if transB {
					bj = b[j*ldb+p]
				} else {
					bj = b[p*ldb+j]
				}
				s += ai * bj
			}
			c[i*ldc+j] = s
		}
	}
}

// slow is naive plus a pause.
func slow(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	naive(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	time.Sleep(200 * time.Microsecond)
}

// smallProbes replaces the probes by tiny products in every layout for the
// length of a test.
func smallProbes(t *testing.T) {
	saved := probes
	t.Cleanup(func() { probes = saved })
	for cl := range probes {
		probes[cl] = []probe{{m: 5, n: 7, k: 3}, {transA: true, m: 4, n: 6, k: 9}, {transB: true, transA: true, m: 8, n: 3, k: 5}}
	}
}

func TestMeasureChoosesTheFaster(t *testing.T) {
	smallProbes(t)
	ch := Measure(naive, slow, time.Millisecond)
	if !ch.NoBLAS() || ch.Mismatch != "" {
		t.Errorf("a slower library was chosen: %v", ch.String())
	}
	ch = Measure(slow, naive, time.Millisecond)
	if !ch.AllBLAS() {
		t.Errorf("a faster library was not chosen: %v", ch.String())
	}
	if !ch.UseBLAS(false, false, 2000, 2000, 2000) || !ch.UseBLAS(false, false, 1, 1, 1) || !ch.UseBLAS(false, true, 2000, 20, 2000) || !ch.UseBLAS(true, false, 2000, 2000, 2000) {
		t.Error("UseBLAS disagrees with the classes")
	}
	for cl, r := range ch.Classes {
		if !(r.BLAS > r.Own) || !ch.valid() {
			t.Errorf("class %v: %+v, want the library faster and positive speeds", Class(cl), r)
		}
	}
}

func TestMeasureRefusesAWrongLibrary(t *testing.T) {
	smallProbes(t)
	wrong := func(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		naive(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
		c[ldc+1] += 0.5
	}
	ch := Measure(slow, wrong, time.Millisecond)
	if !ch.NoBLAS() || !strings.Contains(ch.Mismatch, "element") {
		t.Errorf("a library with wrong results was chosen or not reported: %v", ch.String())
	}
	if !strings.Contains(ch.String(), "BLAS not used") {
		t.Errorf("String %q does not say the library is not used", ch.String())
	}
}

func TestList(t *testing.T) {
	var ch Choice
	ch.Classes[Skinny].UseBLAS = true
	ch.Classes[Large].UseBLAS = true
	if got := ch.List(true); got != "skinny and large" {
		t.Errorf("List(true) = %q", got)
	}
	if got := ch.List(false); got != "small, transposed and narrow" {
		t.Errorf("List(false) = %q", got)
	}
	ch.Classes[Small].UseBLAS = true
	ch.Classes[Narrow].UseBLAS = true
	ch.Classes[Transposed].UseBLAS = true
	if got := ch.List(false); got != "none" {
		t.Errorf("List(false) = %q", got)
	}
	if got := ch.List(true); got != "small, transposed, narrow, skinny and large" {
		t.Errorf("List(true) = %q", got)
	}
}

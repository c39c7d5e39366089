package cpu

import (
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hora-dl/hora/device/cpu/internal/gemm"
	"github.com/hora-dl/hora/device/cpu/internal/gemmchoice"
)

// needBLAS skips the test where no BLAS library is loaded (HORA_BLAS=none
// or none installed).
func needBLAS(t *testing.T) {
	t.Helper()
	if New().gemmBackend().lib == nil {
		t.Skip("no BLAS library: float32 always runs Hora's kernel")
	}
}

// TestGEMMChoiceKept checks that the first device measures the choice and
// keeps it in HORA_CACHE_DIR, that the next one reads it, and that
// HORA_GEMM=measure measures again.
func TestGEMMChoiceKept(t *testing.T) {
	t.Setenv("HORA_GEMM", "")
	needBLAS(t)
	t.Setenv("HORA_CACHE_DIR", t.TempDir())
	first := New().Backend()
	if !strings.Contains(first, "measured now") || !strings.Contains(first, "GFLOP/s Hora/BLAS: small") {
		t.Fatalf("first device: %q, want a measurement", first)
	}
	if _, err := os.Stat(gemmChoicePath()); err != nil {
		t.Fatalf("the choice was not kept: %v", err)
	}
	if second := New().Backend(); !strings.Contains(second, "measured before") {
		t.Errorf("second device: %q, want the kept choice", second)
	}
	t.Setenv("HORA_GEMM", "measure")
	if again := New().Backend(); !strings.Contains(again, "measured now") {
		t.Errorf("HORA_GEMM=measure: %q, want a new measurement", again)
	}
}

// TestGEMMChoiceRoutes checks that each float32 product goes where the
// choice sends its class: its bits are those of the BLAS library or of
// Hora's kernel.
func TestGEMMChoiceRoutes(t *testing.T) {
	t.Setenv("HORA_GEMM", "blas")
	needBLAS(t)
	d := New()
	be := d.gemmBackend()
	if !be.choice.AllBLAS() {
		t.Fatalf("HORA_GEMM=blas: choice %v, want the library for every class", be.choice.String())
	}
	var ch gemmchoice.Choice
	ch.Classes[gemmchoice.Large].UseBLAS = true
	be.choice = ch
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ m, n, k int }{{16, 16, 1500}, {512, 40, 1500}, {200, 190, 1500}} {
		a, b := make([]float32, s.m*s.k), make([]float32, s.k*s.n)
		for i := range a {
			a[i] = rng.Float32() - 0.5
		}
		for i := range b {
			b[i] = rng.Float32() - 0.5
		}
		got, fromBLAS, fromOwn := make([]float32, s.m*s.n), make([]float32, s.m*s.n), make([]float32, s.m*s.n)
		gemmOn(d, false, false, s.m, s.n, s.k, 1, a, s.k, b, s.n, 0, got, s.n)
		be.lib.Sgemm(false, false, s.m, s.n, s.k, 1, a, s.k, b, s.n, 0, fromBLAS, s.n)
		ownSgemm(false, false, s.m, s.n, s.k, 1, a, s.k, b, s.n, 0, fromOwn, s.n)
		if slices.Equal(fromBLAS, fromOwn) {
			t.Logf("%v: the library and %s kernel give the same bits, the route is not observable", s, gemm.Kernel())
			continue
		}
		want, by := fromOwn, "Hora's kernel"
		if ch.UseBLAS(false, false, s.m, s.n, s.k) {
			want, by = fromBLAS, "the library"
		}
		own := "hora"
		if gemm.Kernel() == "go" {
			own = "gonum" // a noasm build
		}
		if name := map[bool]string{true: "blas", false: own}[ch.UseBLAS(false, false, s.m, s.n, s.k)]; d.Float32GEMM(false, false, s.m, s.n, s.k) != name {
			t.Errorf("%v: Float32GEMM = %q, want %q", s, d.Float32GEMM(false, false, s.m, s.n, s.k), name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v (class %v): the product is not %s's", s, gemmchoice.ClassOf(false, false, s.m, s.n, s.k), by)
		}
	}
}

// TestGEMMSettingErrors checks that a HORA_GEMM value that is not a
// setting is reported, with or without a BLAS library.
func TestGEMMSettingErrors(t *testing.T) {
	t.Setenv("HORA_GEMM", "fastest")
	t.Setenv("HORA_CACHE_DIR", t.TempDir())
	err := New().BackendError()
	if err == nil || !strings.Contains(err.Error(), "HORA_GEMM=fastest: expected auto, measure, blas or go") {
		t.Errorf("BackendError = %v, want the bad HORA_GEMM named", err)
	}
}

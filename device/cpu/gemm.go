package cpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/hora-dl/hora/device"
	hblas "github.com/hora-dl/hora/device/cpu/internal/blas"
	"github.com/hora-dl/hora/device/cpu/internal/gemm"
	"github.com/hora-dl/hora/device/cpu/internal/gemmchoice"
	"github.com/hora-dl/hora/internal/diskcache"
	"github.com/hora-dl/hora/internal/hostcpu"
)

// gemmBackend is how a device multiplies matrices, chosen once, at its
// first GEMM. A BLAS library loaded at run time (OpenBLAS, MKL or BLIS, set
// to one thread and called from the device's workers) does float64. Without
// one, float32 goes to Hora's kernel for the CPU (AVX-512, AVX2 or, on
// arm64, NEON; gonum's pure-Go Sgemm where there is none) and float64 to
// gonum. With one, float32 goes to whichever of the two was faster on this
// machine for the product's class of shapes (small, transposed, narrow,
// skinny, large; see gemmchoice): measured once per machine, kernel and
// library, and kept in the user's cache folder (gemmChoicePath). HORA_GEMM=go or HORA_GEMM=blas
// forces the float32 choice, HORA_GEMM=measure measures again; HORA_BLAS
// picks or disables the library (see blas.Load).
type gemmBackend struct {
	once   sync.Once
	lib    *hblas.Library    // nil: no BLAS library
	choice gemmchoice.Choice // per class of float32 product: BLAS or Hora's kernel
	name   string
	err    error // why no BLAS is used (nil when one is)
}

func (d *Device) gemmBackend() *gemmBackend {
	g := &d.gemm
	g.once.Do(func() {
		lib, err := hblas.Load()
		g.lib, g.err = lib, err
		own := fmt.Sprintf("Go assembly (%s)", gemm.Blocking())
		if gemm.Kernel() == "go" {
			own = "gonum (pure Go)"
		}
		setting := os.Getenv("HORA_GEMM")
		if !validGEMMSetting(setting) {
			g.err = errors.Join(g.err, fmt.Errorf("HORA_GEMM=%s: expected auto, measure, blas or go", setting))
		}
		if lib == nil {
			g.name = own + " for float32, gonum for float64"
			return
		}
		var measured string
		switch setting {
		case "go":
			// g.choice is the zero Choice: Hora's kernel for every class.
		case "blas":
			g.choice = allBLAS()
		default: // auto, measure, or a value reported above (taken as auto)
			measured = g.measure(lib, setting == "measure")
		}
		switch {
		case g.choice.NoBLAS():
			g.name = own + " for float32, " + lib.Name() + " for float64"
		case g.choice.AllBLAS():
			g.name = lib.Name() + " for float32 and float64"
		default:
			g.name = fmt.Sprintf("%s for float32 %s products, %s for float32 %s products and float64",
				own, g.choice.List(false), lib.Name(), g.choice.List(true))
		}
		if measured != "" {
			g.name += " [" + measured + "]"
		}
	})
	return g
}

// ownKernelOnly reports whether every float32 product runs Hora's vector
// kernel (no BLAS library for any class, and a kernel in assembly).
func (d *Device) ownKernelOnly() bool {
	g := d.gemmBackend()
	return (g.lib == nil || g.choice.NoBLAS()) && gemm.Kernel() != "go"
}

// Float32GEMM names what multiplies a float32 m×k matrix op(A) by a k×n
// matrix op(B) on this device (transA: op(A) is A transposed, A stored
// k×m; transB: op(B) is B transposed, B stored n×k): "hora" (Hora's
// vector kernel), "blas" (the BLAS library Backend names) or "gonum" (no
// vector kernel for this CPU). Results are reproducible bit for bit only
// on the same implementation.
func (d *Device) Float32GEMM(transA, transB bool, m, n, k int) string {
	g := d.gemmBackend()
	switch {
	case g.lib != nil && g.choice.UseBLAS(transA, transB, m, n, k):
		return "blas"
	case gemm.Kernel() == "go":
		return "gonum"
	}
	return "hora"
}

func validGEMMSetting(v string) bool {
	switch v {
	case "", "auto", "measure", "blas", "go":
		return true
	}
	return false
}

func allBLAS() gemmchoice.Choice {
	var ch gemmchoice.Choice
	for cl := range ch.Classes {
		ch.Classes[cl].UseBLAS = true
	}
	return ch
}

// gemmChoicePath is the file that keeps the measured float32 choice:
// gemm-choice.json in Hora's cache folder (see diskcache.Dir).
func gemmChoicePath() string { return filepath.Join(diskcache.Dir("gemm"), "gemm-choice.json") }

// measurePerProbe is how long each probe product of the measured choice is
// timed (both implementations together take twice as long).
const measurePerProbe = 15 * time.Millisecond

// measure sets g.choice from the cache file, or by timing Hora's kernel
// against lib (again when remeasure is set), and describes where it came
// from.
func (g *gemmBackend) measure(lib *hblas.Library, remeasure bool) string {
	blasImpl := func(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		lib.Sgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
	}
	ownImpl := func(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		ownSgemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
	}
	path := gemmChoicePath()
	key := strings.Join([]string{runtime.GOARCH, hostcpu.Describe(), gemm.Kernel(), gemm.Blocking().String(), lib.Name(), buildRevision()}, " | ")
	ch, src, err := gemmchoice.Cached(path, key, remeasure, func() gemmchoice.Choice {
		return gemmchoice.Measure(ownImpl, blasImpl, measurePerProbe)
	})
	g.choice = ch
	how := "measured now"
	if src == gemmchoice.FromCache {
		how = "measured before"
	}
	where := "kept in " + path
	if err != nil {
		where = "not kept: " + err.Error()
	}
	return fmt.Sprintf("float32 %s, %s, %s", ch.String(), how, where)
}

// buildRevision names the source revision of this binary (its VCS commit,
// "+dirty" when modified), or "" when the build does not record one (go
// test, go run): a new revision measures the choice again.
func buildRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	return rev + dirty
}

// Backend describes how the device multiplies matrices, e.g. "Go assembly
// (avx512 14x32 kc=384 mc=1358 nc=160; L1d 48K L2 1M/2 L3 32M/16) for
// float32, OpenBLAS 0.3.21 SkylakeX (1 thread) for float64" (Hora's kernel,
// its tile, its block sizes and the cache sizes they were derived from, see
// gemm.Blocking) or "OpenBLAS 0.3.21 Haswell (1 thread)" (see gemmBackend
// for the rules and the HORA_GEMM and HORA_BLAS variables).
func (d *Device) Backend() string { return d.gemmBackend().name }

// BackendError returns why no BLAS library is used, or what is wrong with
// the GEMM settings: nil when a library is used and HORA_GEMM is valid; an
// error wrapping blas's not-found error (see IsNoBLAS) when no library was
// found or HORA_BLAS is "none"; the error opening the library HORA_BLAS
// names; an error naming a HORA_GEMM value other than auto, blas or go.
func (d *Device) BackendError() error { return d.gemmBackend().err }

// ErrNoBLAS is the error BackendError wraps when no BLAS library was found
// or HORA_BLAS is "none".
var ErrNoBLAS = hblas.ErrNotFound

// IsNoBLAS reports whether err (from BackendError) only says that no BLAS
// library was found or wanted.
func IsNoBLAS(err error) bool {
	if err == nil || !errors.Is(err, ErrNoBLAS) {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !errors.Is(e, ErrNoBLAS) {
				return false
			}
		}
	}
	return true
}

// workspaces recycles the packing buffers of the Go GEMM kernel, one per
// concurrent call.
var workspaces = sync.Pool{New: func() any { return new(gemm.Workspace) }}

// gemm is the BLAS-style C = alpha*op(A)×op(B) + beta*C on row-major
// slices, single-threaded (callers split work across the device's
// workers). With beta 0, C is not read.
func gemmOn[T float](d *Device, tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleRows(m, n, beta, c, ldc)
		return
	}
	be := d.gemmBackend()
	switch a := any(a).(type) {
	case []float32:
		b, c := any(b).([]float32), any(c).([]float32)
		if be.lib != nil && be.choice.UseBLAS(tA, tB, m, n, k) {
			be.lib.Sgemm(tA, tB, m, n, k, float32(alpha), a, lda, b, ldb, float32(beta), c, ldc)
			return
		}
		ownSgemm(tA, tB, m, n, k, float32(alpha), a, lda, b, ldb, float32(beta), c, ldc)
	case []float64:
		b, c := any(b).([]float64), any(c).([]float64)
		if be.lib != nil {
			be.lib.Dgemm(tA, tB, m, n, k, float64(alpha), a, lda, b, ldb, float64(beta), c, ldc)
			return
		}
		gonum.Implementation{}.Dgemm(gonumTrans(tA), gonumTrans(tB), m, n, k, float64(alpha), a, lda, b, ldb, float64(beta), c, ldc)
	}
}

// sgemmEpilogueOn is gemmOn for the float32 product C = A·B (neither
// transposed, beta 0) followed by the epilogue e, and reports whether e was
// applied: Hora's kernel applies it as it writes C (gemm.SgemmEpilogue); a
// product that goes to the BLAS or to gonum is computed alone, and the
// caller applies e.
func sgemmEpilogueOn(d *Device, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, e gemm.Epilogue) bool {
	if d.Float32GEMM(false, false, m, n, k) != "hora" {
		gemmOn(d, false, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
		return false
	}
	ws := workspaces.Get().(*gemm.Workspace)
	defer workspaces.Put(ws)
	return gemm.SgemmEpilogue(ws, false, false, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, e)
}

// ownSgemm is Hora's float32 GEMM on one thread: its Go-assembly kernel,
// or, where the CPU has no vector kernel (or in a noasm build), gonum's
// pure-Go Sgemm, about 3× faster than Hora's pure-Go kernel.
func ownSgemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if gemm.Kernel() == "go" {
		gonum.Implementation{}.Sgemm(gonumTrans(tA), gonumTrans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	ws := workspaces.Get().(*gemm.Workspace)
	gemm.Sgemm(ws, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	workspaces.Put(ws)
}

func gonumTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// scaleRows sets C = beta*C (C not read when beta is 0).
func scaleRows[T float](m, n int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// gemmTask computes one block of rows or columns of a large GEMM.
type gemmTask[T float] struct {
	d             *Device
	tA, tB        bool
	m, n, k       int
	alpha, beta   T
	a, b, c       []T
	lda, ldb, ldc int
	byRows        bool
	unit          int // rows or columns per index of the task's range
}

func (t *gemmTask[T]) run(lo, hi int) {
	i0, i1 := lo*t.unit, hi*t.unit
	if t.byRows {
		i1 = min(i1, t.m)
		aOff := i0 * t.lda // rows of op(A)
		if t.tA {
			aOff = i0
		}
		gemmOn(t.d, t.tA, t.tB, i1-i0, t.n, t.k, t.alpha, t.a[aOff:], t.lda, t.b, t.ldb, t.beta, t.c[i0*t.ldc:], t.ldc)
		return
	}
	i1 = min(i1, t.n)
	bOff := i0 // columns of op(B)
	if t.tB {
		bOff = i0 * t.ldb
	}
	gemmOn(t.d, t.tA, t.tB, t.m, i1-i0, t.k, t.alpha, t.a, t.lda, t.b[bOff:], t.ldb, t.beta, t.c[i0:], t.ldc)
}

// serialGemmMax is the largest product (m·n·k multiply-adds) that
// parallelGemm does not split: up to it, handing half of the work to
// another worker costs more than it saves. Measured on 2 Zen 5 cores
// (BenchmarkParallelGemm, fastest calls, i.e. with the other core idle):
// splitting loses at 64×64×64 and 128×64×64 (524,288) and on the MLP's
// 10-wide products (327,680: 1.06–1.14× slower split), and wins from
// 128×64×128 (1,048,576: 1.2–1.5×). On a machine busy with other work the
// hand-off costs more (median calls: splitting made the 10-wide products
// about 2× slower, and still lost at 128×128×128). A variable for that
// benchmark.
var serialGemmMax = 1 << 19

// parallelGemm splits one GEMM across the device's workers by blocks of
// rows of C (or of columns, when C has few rows).
func parallelGemm[T float](d *Device, tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	w := d.numWorkers()
	if w <= 1 || m*n*k <= serialGemmMax {
		gemmOn(d, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	t := getGemmTask[T]()
	defer putGemmTask(t)
	*t = gemmTask[T]{d: d, tA: tA, tB: tB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
	var tasks int
	t.byRows, t.unit, tasks = gemmSplit(m, n, 32)
	if a32, ok := any(a).([]float32); ok && t.byRows && sharesPackedB(d, tA, tB, m, n, k, w) {
		sharedPackedGemm(d, tA, tB, m, n, k, float32(alpha), a32, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc, t.unit, tasks)
		return
	}
	d.parallel(tasks, 1<<20, t)
}

// sharedPackMin is the size of op(B), in floats, from which a float32
// product split by rows packs op(B) once, each worker packing a share of
// its panels, instead of once per worker (each worker's rows read all of
// op(B)). sgemm on 2 Zen 4 threads: 1024³ 190–198 → 191–207 GFLOP/s
// (three of four runs faster; OpenBLAS 203–205), 2048³ 205 → 206–208;
// 512³ (op(B) 1 MB) 212–217 → 203–205, slower.
const sharedPackMin = 1 << 20

// sharesPackedB reports whether parallelGemm packs op(B) once for all
// workers (sharedPackedGemm): op(B) of at least sharedPackMin floats, and
// each worker's rows going to Hora's own assembly kernel (not to a BLAS
// by the GEMM choice, nor to the pure-Go kernel).
func sharesPackedB(d *Device, tA, tB bool, m, n, k, workers int) bool {
	if n*k < sharedPackMin || gemm.Kernel() == "go" {
		return false
	}
	be := d.gemmBackend()
	return be.lib == nil || !be.choice.UseBLAS(tA, tB, (m+workers-1)/workers, n, k)
}

// sharedPackedGemm computes the float32 C = alpha·op(A)·op(B) + beta·C
// with op(B) packed once (gemm.PackB's layout) by all workers, a share of
// its panels each, then each worker's blocks of unit rows of C from it
// (gemm.SgemmPackedB: Sgemm's bits).
func sharedPackedGemm(d *Device, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc, unit, blocks int) {
	sc := getScratch[float32](gemm.PackedBSize(k, n))
	defer putScratch(sc)
	nr := gemm.PanelWidth()
	launch(d, (n+nr-1)/nr, nr*k, packBArgs{transB: tB, b: b, ldb: ldb, k: k, n: n, pb: sc.s, nr: nr})
	launch(d, blocks, 1<<20, packedGemmTask{tA: tA, m: m, n: n, k: k, alpha: alpha, beta: beta, a: a, lda: lda, pb: sc.s, c: c, ldc: ldc,
		byRows: true, unit: unit})
}

// packBArgs packs panels [lo, hi) of op(B) into pb (gemm.PackBColumns).
type packBArgs struct {
	transB    bool
	b, pb     []float32
	ldb, k, n int
	nr        int // columns per panel
}

func (a *packBArgs) run(lo, hi int) {
	gemm.PackBColumns(a.pb, a.transB, a.b, a.ldb, a.k, a.n, lo*a.nr, min(hi*a.nr, a.n))
}

// gemmSplit is how a product whose C is m×n splits across the workers: by
// blocks of 8 rows of C when C is at least as tall as wide, else by
// blocks of colUnit columns (the larger side, so that each part packs
// only its share of it). It returns the split and the number of blocks.
func gemmSplit(m, n, colUnit int) (byRows bool, unit, blocks int) {
	const rowUnit = 8
	if m >= n {
		return true, rowUnit, (m + rowUnit - 1) / rowUnit
	}
	return false, colUnit, (n + colUnit - 1) / colUnit
}

// matmulPackedB is matmul for one float32 product whose op(B) is packed
// (packedWeight), split across the workers as parallelGemm splits
// (gemmSplit), its blocks of columns whole panels.
func matmulPackedB(d *Device, p device.MatMulParams, c, a, pb []float32) {
	t := packedGemmTask{tA: p.TransA, m: p.M, n: p.N, k: p.K, alpha: float32(p.Alpha), beta: float32(p.Beta),
		a: a[p.AOff:], pb: pb, c: c[p.COff:], lda: p.K, ldc: p.N}
	if p.TransA {
		t.lda = p.M
	}
	w := d.numWorkers()
	if w <= 1 || (p.M*p.N*p.K <= serialGemmMax && p.N*p.K < packedSplitMin) {
		t.run(0, 1)
		return
	}
	var blocks int
	t.byRows, t.unit, blocks = gemmSplit(p.M, p.N, gemm.PanelWidth())
	launch(d, blocks, 1<<20, t)
}

// packedSplitMin is the size of op(B), in floats, from which
// matmulPackedB splits a product however few its multiply-adds: a product
// of a few rows streams B from L3 or memory, and each worker then reads
// half of it. resnet18's classifier at batch 1 (1×512 by 512×1000, under
// serialGemmMax) took 0.064 ms on one core and 0.056 ms split (Zen 5, 2
// threads, per-node times of the model).
const packedSplitMin = 1 << 18

// packedGemmTask computes one block of rows or columns of a product with
// a packed op(B); unit 0 means the whole product.
type packedGemmTask struct {
	tA          bool
	m, n, k     int
	alpha, beta float32
	a, pb, c    []float32
	lda, ldc    int
	byRows      bool
	unit        int // rows or columns per index of the task's range
}

func (t *packedGemmTask) run(lo, hi int) {
	ws := workspaces.Get().(*gemm.Workspace)
	defer workspaces.Put(ws)
	switch {
	case t.unit == 0:
		gemm.SgemmPackedB(ws, t.tA, t.m, t.n, t.k, 0, t.n, t.alpha, t.a, t.lda, t.pb, t.beta, t.c, t.ldc, gemm.Epilogue{})
	case t.byRows:
		i0, i1 := lo*t.unit, min(hi*t.unit, t.m)
		aOff := i0 * t.lda // rows of op(A)
		if t.tA {
			aOff = i0
		}
		gemm.SgemmPackedB(ws, t.tA, i1-i0, t.n, t.k, 0, t.n, t.alpha, t.a[aOff:], t.lda, t.pb, t.beta, t.c[i0*t.ldc:], t.ldc, gemm.Epilogue{})
	default:
		gemm.SgemmPackedB(ws, t.tA, t.m, t.n, t.k, lo*t.unit, min(hi*t.unit, t.n), t.alpha, t.a, t.lda, t.pb, t.beta, t.c, t.ldc, gemm.Epilogue{})
	}
}

var (
	gemmTasks32 = sync.Pool{New: func() any { return new(gemmTask[float32]) }}
	gemmTasks64 = sync.Pool{New: func() any { return new(gemmTask[float64]) }}
)

// getGemmTask returns a recycled task, so that splitting a GEMM allocates
// nothing.
func getGemmTask[T float]() *gemmTask[T] {
	if _, ok := any(T(0)).(float32); ok {
		return gemmTasks32.Get().(*gemmTask[T])
	}
	return gemmTasks64.Get().(*gemmTask[T])
}

func putGemmTask[T float](t *gemmTask[T]) {
	*t = gemmTask[T]{} // drop the slices
	if _, ok := any(T(0)).(float32); ok {
		gemmTasks32.Put(t)
		return
	}
	gemmTasks64.Put(t)
}

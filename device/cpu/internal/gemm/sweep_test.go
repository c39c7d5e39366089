//go:build amd64 && !noasm

package gemm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func envInts(name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var r []int
	for _, f := range strings.Split(v, ",") {
		x, _ := strconv.Atoi(f)
		r = append(r, x)
	}
	return r
}

func TestSweep(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	n := envInts("N", []int{1024})[0]
	m, nn, k := envInts("M", []int{n})[0], envInts("NN", []int{n})[0], envInts("KK", []int{n})[0]
	ta, tb := os.Getenv("TA") != "", os.Getenv("TB") != ""
	workers := envInts("W", []int{1})[0]
	reps := envInts("R", []int{5})[0]
	if name := os.Getenv("K"); name != "" {
		setKernel(name)
		defer setKernel(kernels[0].name)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a := randSlice(rng, m*k)
	b := randSlice(rng, k*nn)
	c := randSlice(rng, m*nn)
	lda, ldb := k, nn
	if ta {
		lda = m
	}
	if tb {
		ldb = k
	}
	wss := make([]Workspace, workers)
	kern := active
	old := *kern
	defer func() { *kern = old }()
	for _, kc := range envInts("KC", []int{kern.kc}) {
		for _, mc := range envInts("MC", []int{kern.mc}) {
			for _, nc := range envInts("NC", []int{kern.nc}) {
				kern.kc, kern.mc, kern.nc = kc, mc, nc
				best := time.Hour
				bestCPU := time.Hour
				runtime.LockOSThread()
				for r := 0; r < reps; r++ {
					t0 := time.Now()
					c0 := threadCPU()
					if workers == 1 {
						Sgemm(&wss[0], ta, tb, m, nn, k, 1, a, lda, b, ldb, 0, c, nn)
					} else {
						mid := (m/2 + kern.mr - 1) / kern.mr * kern.mr
						a1 := a[mid*lda:]
						if ta {
							a1 = a[mid:]
						}
						var wg sync.WaitGroup
						wg.Add(1)
						go func() {
							defer wg.Done()
							Sgemm(&wss[1], ta, tb, m-mid, nn, k, 1, a1, lda, b, ldb, 0, c[mid*nn:], nn)
						}()
						Sgemm(&wss[0], ta, tb, mid, nn, k, 1, a, lda, b, ldb, 0, c, nn)
						wg.Wait()
					}
					if d := time.Since(t0); d < best {
						best = d
					}
					if d := threadCPU() - c0; d < bestCPU {
						bestCPU = d
					}
				}
				runtime.UnlockOSThread()
				fl := 2 * float64(m) * float64(nn) * float64(k)
				fmt.Printf("%dx%dx%d w=%d kc=%d mc=%d nc=%d wall %.1f  cpu %.1f GFLOP/s\n", m, nn, k, workers, kc, mc, nc, fl/best.Seconds()/1e9, fl/bestCPU.Seconds()/1e9)
			}
		}
	}
}

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0) // CLOCK_THREAD_CPUTIME_ID
	return time.Duration(ts.Nano())
}

func bestOf(reps int, f func()) time.Duration {
	best := time.Hour
	for r := 0; r < reps; r++ {
		t0 := time.Now()
		f()
		if d := time.Since(t0); d < best {
			best = d
		}
	}
	return best
}

func TestPackSpeed(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1024
	const kb = 256
	src := randSlice(rng, n*n)
	dst := alignedFloats(n*kb + 16)
	type packer func(d, src []float32, ld, w, kb, v int)
	for _, w := range []int{14, 32} {
		for _, pk := range []struct {
			name string
			f    packer
		}{{"goTrans", packTrans}, {"asmTrans", packTransAVX512}} {
			d := bestOf(300, func() {
				for j := 0; j+w <= n; j += w {
					pk.f(dst[j*kb:], src[j*n:], n, w, kb, w)
				}
			})
			fmt.Printf("w=%d %s %.2f Gelem/s\n", w, pk.name, float64(n/w*w*kb)/d.Seconds()/1e9)
		}
		for _, pk := range []struct {
			name string
			f    packer
		}{{"goCopy", packCopy}} {
			d := bestOf(300, func() {
				for j := 0; j+w <= n; j += w {
					pk.f(dst[j*kb:], src[j:], n, w, kb, w)
				}
			})
			fmt.Printf("w=%d %s %.2f Gelem/s\n", w, pk.name, float64(n/w*w*kb)/d.Seconds()/1e9)
		}
	}
}

func TestKernelSpeed(t *testing.T) {
	if os.Getenv("SWEEP") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	kc := 256
	a := randSlice(rng, kc*14)
	bb := randSlice(rng, kc*32)
	c := make([]float32, 14*32)
	for _, beta := range []float32{0, 1} {
		for _, tc := range []struct {
			name string
			f    func()
			rows int
		}{
			{"x14", func() { kernelAVX512(kc, a, bb, c, 32, 1, beta) }, 14},
			{"x14mask", func() { edgeAVX512(kc, a, bb, c, 32, 1, beta, 14, 31) }, 14},
			{"x8", func() { edgeAVX512(kc, a, bb, c, 32, 1, beta, 8, 32) }, 8},
			{"x4", func() { edgeAVX512(kc, a, bb, c, 32, 1, beta, 4, 32) }, 4},
			{"x2", func() { edgeAVX512(kc, a, bb, c, 32, 1, beta, 2, 32) }, 2},
			{"x1", func() { edgeAVX512(kc, a, bb, c, 32, 1, beta, 1, 32) }, 1},
		} {
			d := bestOf(200, func() {
				for i := 0; i < 100; i++ {
					tc.f()
				}
			})
			fmt.Printf("beta=%v %s %.1f GFLOP/s\n", beta, tc.name, 2*float64(kc*32*tc.rows)*100/d.Seconds()/1e9)
		}
	}
}

package gemm

// Block sizes derived from the cache sizes (see doc.go, Blocking).

import (
	"fmt"
	"runtime"
	"sync"
)

// blocks are the block sizes of one kernel (see kernelInfo).
type blocks struct{ kc, mc, nc int }

// Bounds of the derived block sizes, whatever the caches report: nc and mc
// stay between a few micro-panels and the largest block the kernels have
// been tuned with. mc's upper bound is the kernel's default mc (4096): on a
// machine with a large L3 share the default is kept.
const ncMax = 4096

// deriveBlocks returns the block sizes of an mr×nr micro-kernel on a CPU
// with the caches c, or def when c does not give the L1d and L2 sizes; cpus
// (the logical CPUs this process may use) stands for the sharing of an L3
// whose sharing is unknown. It is a pure function of its arguments.
//
// The rules follow the loop nest of Sgemm (see doc.go), in which the
// operand reused from L1 is the mr×kc micro-panel of Ã, the one kept in L2
// the kc×nc block B̃, and the one kept in L3 the mc×kc block Ã (BLIS has the
// roles of A and B the other way round):
//
//   - kc stays the kernel's default (def.kc): kc sets where k is split, so
//     the order in which every element of C is summed, and with it the bits
//     of every product with k > kc. Taking it from L1d would make a run's
//     results depend on the machine's L1d for the same kernel (the results
//     of train's TestResumesARunWrittenBeforeTheLibrary, bit-identical to a
//     run made with kc = 384, differ with the 432 that "the mr×kc
//     micro-panel of Ã fills half of L1d" gives on Zen 5), for no speed:
//     on Zen 5 kc from 128 to 432 ran within the noise of each other
//     (1024 and 2048, one and two cores). The defaults keep the micro-panel
//     of Ã within half of a 48K L1d (21K for avx512).
//   - nc: the kc×nc block of B̃ fills about half of this CPU's share of L2
//     (the L2 divided among the logical CPUs sharing it), the rest being
//     left to the Ã micro-panels and C; the nearest multiple of nr, within
//     [4·nr, ncMax]. (Rounding down gave 320 instead of 352 on Zen 5, which
//     splits n = 2048 into 7 blocks instead of 6 and ran 2.4% slower on one
//     core; 352 gives the blocks of the default 384 on the sizes measured.)
//   - mc: the mc×kc block of Ã fits this CPU's share of L3; the nearest
//     multiple of mr within [16·mr, def.mc]. Without an L3 size mc is
//     def.mc.
//
// nc and mc only choose which tiles are computed together, not how: they
// do not change a single bit of the result.
func deriveBlocks(mr, nr int, c Caches, cpus int, def blocks) blocks {
	if !c.known() {
		return def
	}
	const f = 4 // bytes per float32
	kc := def.kc
	l2 := c.L2 / max(1, c.L2Sharing)
	nc := clamp(roundTo(l2/2/(f*kc), nr), 4*nr, ncMax/nr*nr)
	mc := def.mc
	if c.L3 > 0 {
		sharing := c.L3Sharing
		if sharing <= 0 {
			sharing = cpus
		}
		l3 := c.L3 / max(1, sharing)
		mc = clamp(roundTo(l3/(f*kc), mr), 16*mr, def.mc/mr*mr)
	}
	return blocks{kc: kc, mc: mc, nc: nc}
}

// roundTo returns the multiple of unit nearest to v (v >= 0).
func roundTo(v, unit int) int { return (v + unit/2) / unit * unit }

// clamp returns v limited to [lo, hi].
func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

var (
	blockingOnce sync.Once
	// caches are the cache sizes read by setupBlocking.
	caches Caches
)

// setupBlocking reads the cache sizes once and sets every kernel's nc and
// mc from them (their defaults stay when the sizes cannot be read). Sgemm
// and Blocking call it; it must run before any test changes a kernel.
func setupBlocking() {
	blockingOnce.Do(func() {
		caches = detectCaches()
		for _, k := range kernels {
			b := deriveBlocks(k.mr, k.nr, caches, runtime.NumCPU(), blocks{kc: k.kc, mc: k.mc, nc: k.nc})
			k.kc, k.mc, k.nc = b.kc, b.mc, b.nc
		}
	})
}

// BlockInfo describes how Sgemm blocks its products on this machine: the
// micro-kernel and its tile, the block sizes and the cache sizes they were
// derived from.
type BlockInfo struct {
	Kernel string // the micro-kernel, as Kernel names it
	MR, NR int    // the MR×NR tile of C it computes
	// KC is the depth of a packed block, NC the columns of op(B) packed at
	// once (a kc×nc block kept in L2), MC the rows of op(A) packed at once
	// (an mc×kc block kept in L3).
	KC, MC, NC int
	// Caches are the sizes NC and MC were derived from; with unknown sizes
	// (Caches.Source == "") the blocks are the kernel's defaults.
	Caches Caches
}

// Blocking returns the micro-kernel and block sizes Sgemm uses, reading the
// cache sizes first if no product has yet.
func Blocking() BlockInfo {
	setupBlocking()
	k := active
	return BlockInfo{Kernel: k.name, MR: k.mr, NR: k.nr, KC: k.kc, MC: k.mc, NC: k.nc, Caches: caches}
}

// String formats b as "avx512 14x32 kc=384 mc=1372 nc=160; L1d 48K L2 1M/2
// L3 32M/16" (a cache's sharing after the slash), or "...; cache sizes
// unknown" when the blocks are the kernel's defaults.
func (b BlockInfo) String() string {
	return fmt.Sprintf("%s %dx%d kc=%d mc=%d nc=%d; %v", b.Kernel, b.MR, b.NR, b.KC, b.MC, b.NC, b.Caches)
}

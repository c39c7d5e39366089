package gemm

// Cache sizes: where they come from (sysfs, CPUID) and how they are parsed.
// The parsers are pure functions of the text or register values they are
// given, so that tests can feed them fixtures from any machine.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Caches describes the data caches of the CPU Sgemm runs on, as far as they
// could be read: the size in bytes of one cache of each level (one L1d, one
// L2, one L3) and how many logical CPUs share it. A zero field is unknown.
type Caches struct {
	L1d, L2, L3 int // bytes of one cache instance
	// L2Sharing and L3Sharing count the logical CPUs sharing one L2 and
	// one L3 (0: unknown).
	L2Sharing, L3Sharing int
	// Source says where the sizes come from: "sysfs", "cpuid leaf 4",
	// "cpuid leaf 0x8000001d", "cpuid legacy AMD leaves", or "" when none
	// could be read (the blocking then uses the kernels' default sizes).
	Source string
}

// known reports whether c holds at least the L1d and L2 sizes, the least the
// blocking needs.
func (c Caches) known() bool { return c.L1d > 0 && c.L2 > 0 }

// String formats the sizes as "L1d 48K L2 1M L3 32M/8", the L3 followed by
// the number of logical CPUs sharing it when known (L2's likewise when
// more than one), or "cache sizes unknown".
func (c Caches) String() string {
	if !c.known() {
		return "cache sizes unknown"
	}
	s := "L1d " + formatSize(c.L1d) + " L2 " + formatSize(c.L2)
	if c.L2Sharing > 1 {
		s += "/" + strconv.Itoa(c.L2Sharing)
	}
	if c.L3 > 0 {
		s += " L3 " + formatSize(c.L3)
		if c.L3Sharing > 1 {
			s += "/" + strconv.Itoa(c.L3Sharing)
		}
	}
	return s
}

// formatSize writes a byte count as 48K, 1M, 1.5M.
func formatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	default:
		return strconv.Itoa(n)
	}
}

// detectCaches reads the cache sizes of this machine: from sysfs (Linux,
// every architecture), else from CPUID (amd64), else it returns the zero
// Caches. It never panics.
func detectCaches() Caches {
	if c, err := sysfsCaches(os.DirFS("/sys/devices/system/cpu")); err == nil {
		return c
	}
	return cpuidCaches()
}

// errNoCaches is returned when sysfs describes no usable data cache.
var errNoCaches = errors.New("gemm: no L1d and L2 cache in sysfs")

// sysfsCaches parses cpu0/cache/index*/{level,type,size,shared_cpu_list}
// under fsys (rooted at /sys/devices/system/cpu), as Linux lays them out:
// level "1".."3", type "Data", "Instruction" or "Unified", size "48K",
// shared_cpu_list "0-1,64-65". Instruction caches are skipped, and so is a
// directory with a missing or malformed level, type or size; a malformed
// shared_cpu_list only leaves the sharing unknown. It fails unless an L1d
// and an L2 were found.
func sysfsCaches(fsys fs.FS) (Caches, error) {
	const dir = "cpu0/cache"
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return Caches{}, err
	}
	var c Caches
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		d := path.Join(dir, e.Name())
		read := func(name string) string {
			b, err := fs.ReadFile(fsys, path.Join(d, name))
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		level, err := strconv.Atoi(read("level"))
		if err != nil {
			continue
		}
		typ := read("type")
		if typ != "Data" && typ != "Unified" {
			continue
		}
		size, err := parseSize(read("size"))
		if err != nil || size <= 0 {
			continue
		}
		sharing, err := countCPUList(read("shared_cpu_list"))
		if err != nil {
			sharing = 0
		}
		switch level {
		case 1:
			c.L1d = size
		case 2:
			c.L2, c.L2Sharing = size, sharing
		case 3:
			c.L3, c.L3Sharing = size, sharing
		}
	}
	if !c.known() {
		return Caches{}, errNoCaches
	}
	c.Source = "sysfs"
	return c, nil
}

// parseSize parses a sysfs cache size: a number of bytes with an optional
// K, M or G suffix (sysfs writes "48K").
func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<40/mult {
		return 0, fmt.Errorf("gemm: bad cache size %q", s)
	}
	return n * mult, nil
}

// countCPUList counts the CPUs of a sysfs CPU list such as "0-3,8,10-11".
func countCPUList(s string) (int, error) {
	if s == "" {
		return 0, errors.New("gemm: empty CPU list")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("gemm: bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("gemm: bad CPU list %q", s)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// cpuidFunc returns EAX, EBX, ECX and EDX of CPUID for a leaf and subleaf.
type cpuidFunc func(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// cpuidCachesFrom reads the cache sizes with cpuid: the deterministic
// cache parameters of leaf 4 (Intel) or, failing that, of leaf 0x8000001d
// (AMD, same layout), and failing both AMD's legacy leaves 0x80000005 and
// 0x80000006 (sizes without sharing; some hypervisors answer only these).
// It returns the zero Caches when none describes an L1d and an L2.
func cpuidCachesFrom(cpuid cpuidFunc) Caches {
	maxLeaf, _, _, _ := cpuid(0, 0)
	maxExt, _, _, _ := cpuid(0x80000000, 0)
	if maxLeaf >= 4 {
		if c := deterministicCaches(cpuid, 4); c.known() {
			c.Source = "cpuid leaf 4"
			return c
		}
	}
	if maxExt >= 0x8000001d {
		if c := deterministicCaches(cpuid, 0x8000001d); c.known() {
			c.Source = "cpuid leaf 0x8000001d"
			return c
		}
	}
	if maxExt >= 0x80000006 {
		_, _, l1, _ := cpuid(0x80000005, 0)
		_, _, l2, l3 := cpuid(0x80000006, 0)
		c := Caches{
			L1d: int(l1>>24) << 10, // ECX[31:24]: L1d in KiB
			L2:  int(l2>>16) << 10, // ECX[31:16]: L2 in KiB
			L3:  int(l3>>18) << 19, // EDX[31:18]: L3 in 512 KiB units
		}
		if c.known() {
			c.Source = "cpuid legacy AMD leaves"
			return c
		}
	}
	return Caches{}
}

// deterministicCaches walks the subleaves of CPUID leaf 4 or 0x8000001d
// (same layout) until the null cache type: EAX[4:0] type (1 data,
// 2 instruction, 3 unified), EAX[7:5] level, EAX[25:14] logical CPUs
// sharing the cache minus one; EBX ways-1 [31:22], partitions-1 [21:12],
// line size-1 [11:0]; ECX sets-1.
func deterministicCaches(cpuid cpuidFunc, leaf uint32) Caches {
	var c Caches
	for sub := uint32(0); sub < 16; sub++ {
		eax, ebx, ecx, _ := cpuid(leaf, sub)
		typ := eax & 0x1f
		if typ == 0 {
			break
		}
		if typ == 2 {
			continue
		}
		ways := int(ebx>>22) + 1
		parts := int(ebx>>12&0x3ff) + 1
		line := int(ebx&0xfff) + 1
		size := ways * parts * line * (int(ecx) + 1)
		sharing := int(eax>>14&0xfff) + 1
		switch eax >> 5 & 7 {
		case 1:
			c.L1d = size
		case 2:
			c.L2, c.L2Sharing = size, sharing
		case 3:
			c.L3, c.L3Sharing = size, sharing
		}
	}
	return c
}

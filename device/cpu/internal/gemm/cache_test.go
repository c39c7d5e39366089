package gemm

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sysfsFixture builds a /sys/devices/system/cpu tree with one
// cpu0/cache/index<i> directory per entry, each "level type size
// shared_cpu_list" (a "-" leaves that file out).
func sysfsFixture(entries ...string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i, e := range entries {
		dir := "cpu0/cache/index" + string(rune('0'+i)) + "/"
		for j, name := range []string{"level", "type", "size", "shared_cpu_list"} {
			if v := strings.Fields(e)[j]; v != "-" {
				fsys[dir+name] = &fstest.MapFile{Data: []byte(v + "\n")}
			}
		}
	}
	fsys["cpu0/cache/uevent"] = &fstest.MapFile{} // not an index directory
	return fsys
}

func TestSysfsCaches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		want    Caches
		wantErr bool
	}{
		{
			name: "Zen 5 (8 cores with SMT per CCD)",
			fsys: sysfsFixture("1 Data 48K 0,64", "1 Instruction 32K 0,64", "2 Unified 1024K 0,64", "3 Unified 32768K 0-7,64-71"),
			want: Caches{L1d: 48 << 10, L2: 1 << 20, L2Sharing: 2, L3: 32 << 20, L3Sharing: 16, Source: "sysfs"},
		},
		{
			name: "Intel, L2 shared by a module of 4, no L3",
			fsys: sysfsFixture("1 Data 32K 0", "1 Instruction 64K 0", "2 Unified 2048K 0-3"),
			want: Caches{L1d: 32 << 10, L2: 2 << 20, L2Sharing: 4, Source: "sysfs"},
		},
		{
			name: "sizes in M and bytes, unreadable sharing",
			fsys: sysfsFixture("1 Data 49152 0", "2 Unified 2M x-y", "3 Unified 96M -"),
			want: Caches{L1d: 48 << 10, L2: 2 << 20, L3: 96 << 20, Source: "sysfs"},
		},
		{
			name: "malformed L3 skipped",
			fsys: sysfsFixture("1 Data 48K 0", "2 Unified 1024K 0", "3 Unified lots 0-15"),
			want: Caches{L1d: 48 << 10, L2: 1 << 20, L2Sharing: 1, Source: "sysfs"},
		},
		{
			name: "entries with a missing file or bad level skipped",
			fsys: sysfsFixture("1 Data - 0", "x Data 32K 0", "1 Data 32K 0", "2 - 1M 0", "2 Unified 512K 0"),
			want: Caches{L1d: 32 << 10, L2: 512 << 10, L2Sharing: 1, Source: "sysfs"},
		},
		{name: "no L2", fsys: sysfsFixture("1 Data 48K 0", "1 Instruction 32K 0"), wantErr: true},
		{name: "instruction caches only", fsys: sysfsFixture("1 Instruction 32K 0", "2 Instruction 1M 0"), wantErr: true},
		{name: "negative size", fsys: sysfsFixture("1 Data -48K 0", "2 Unified 1M 0"), wantErr: true},
		{name: "empty cache directory", fsys: fstest.MapFS{"cpu0/cache/uevent": &fstest.MapFile{}}, wantErr: true},
		{name: "no cache directory (as in some VMs)", fsys: fstest.MapFS{"cpu0/uevent": &fstest.MapFile{}}, wantErr: true},
		{name: "empty files", fsys: fstest.MapFS{
			"cpu0/cache/index0/level": &fstest.MapFile{}, "cpu0/cache/index0/type": &fstest.MapFile{},
			"cpu0/cache/index0/size": &fstest.MapFile{}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sysfsCaches(tc.fsys)
			if tc.wantErr {
				require.Error(t, err)
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"48K": 48 << 10, "1024K": 1 << 20, "2M": 2 << 20, "1G": 1 << 30, "512": 512, "0K": 0} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "K", "48k", "4.5M", "-1K", "12 K", "99999999999999999999", "2000000000G"} {
		_, err := parseSize(in)
		assert.Error(t, err, in)
	}
}

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0,64": 2, "0-7": 8, "0-7,64-71": 16, "3,5-6,9": 4} {
		got, err := countCPUList(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "a", "0-", "-3", "5-2", "0,,1", "0-3-4"} {
		_, err := countCPUList(in)
		assert.Error(t, err, in)
	}
}

// fakeCPUID answers CPUID from a table of {leaf, subleaf} → registers;
// other leaves read as zeros, as reserved leaves do.
type fakeCPUID map[[2]uint32][4]uint32

func (f fakeCPUID) cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32) {
	r := f[[2]uint32{leaf, sub}]
	return r[0], r[1], r[2], r[3]
}

// cacheLeaf encodes one subleaf of CPUID leaf 4 / 0x8000001d.
func cacheLeaf(typ, level, sharing, ways, line, sets uint32) [4]uint32 {
	return [4]uint32{typ | level<<5 | (sharing-1)<<14, (ways-1)<<22 | (line - 1), sets - 1, 0}
}

func TestCPUIDCaches(t *testing.T) {
	intel := fakeCPUID{
		{0, 0}:          {0x16, 0, 0, 0},
		{0x80000000, 0}: {0x80000008, 0, 0, 0},
		{4, 0}:          cacheLeaf(1, 1, 2, 12, 64, 64),         // 48K L1d
		{4, 1}:          cacheLeaf(2, 1, 2, 8, 64, 64),          // 32K L1i
		{4, 2}:          cacheLeaf(3, 2, 2, 16, 64, 2048),       // 2M L2
		{4, 3}:          cacheLeaf(3, 3, 128, 15, 64, 112*1024), // 105M
	}
	amd := fakeCPUID{
		{0, 0}:          {0x10, 0, 0, 0},
		{0x80000000, 0}: {0x80000021, 0, 0, 0},
		{0x8000001d, 0}: cacheLeaf(1, 1, 2, 12, 64, 64),   // 48K L1d
		{0x8000001d, 1}: cacheLeaf(2, 1, 2, 8, 64, 64),    // 32K L1i
		{0x8000001d, 2}: cacheLeaf(3, 2, 2, 16, 64, 1024), // 1M L2
		{0x8000001d, 3}: cacheLeaf(3, 3, 16, 16, 64, 32768),
	}
	// What the hypervisor of this project's machine answers: AMD's leaf
	// 0x8000001d is all zeros, the legacy leaves give L1d 48K, L2 1M and
	// the L3 of the whole package.
	legacy := fakeCPUID{
		{0, 0}:          {0xd, 0, 0, 0},
		{0x80000000, 0}: {0x80000021, 0, 0, 0},
		{0x80000005, 0}: {0xff60ff40, 0xff60ff40, 0x300c0140, 0x20080140},
		{0x80000006, 0}: {0x40802040, 0x60804040, 0x04006140, 0x0fe09140},
	}
	for _, tc := range []struct {
		name string
		f    fakeCPUID
		want Caches
	}{
		{"Intel leaf 4", intel, Caches{L1d: 48 << 10, L2: 2 << 20, L2Sharing: 2, L3: 105 << 20, L3Sharing: 128, Source: "cpuid leaf 4"}},
		{"AMD leaf 0x8000001d", amd, Caches{L1d: 48 << 10, L2: 1 << 20, L2Sharing: 2, L3: 32 << 20, L3Sharing: 16, Source: "cpuid leaf 0x8000001d"}},
		{"AMD legacy leaves", legacy, Caches{L1d: 48 << 10, L2: 1 << 20, L3: 1016 * 512 << 10, Source: "cpuid legacy AMD leaves"}},
		{"nothing", fakeCPUID{}, Caches{}},
		{"leaf 4 without L2, no extended leaves", fakeCPUID{{0, 0}: {4, 0, 0, 0}, {4, 0}: cacheLeaf(1, 1, 1, 8, 64, 64)}, Caches{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, cpuidCachesFrom(tc.f.cpuid))
		})
	}
}

func TestRoundTo(t *testing.T) {
	for _, tc := range [][3]int{{341, 32, 352}, {335, 32, 320}, {336, 32, 352}, {0, 32, 0}, {15, 32, 0}, {1365, 14, 1372}, {938, 14, 938}} {
		assert.Equal(t, tc[2], roundTo(tc[0], tc[1]), "roundTo(%d, %d)", tc[0], tc[1])
	}
}

func TestDeriveBlocks(t *testing.T) {
	def := blocks{kc: 384, mc: 4096, nc: 384}
	for _, tc := range []struct {
		name   string
		mr, nr int
		c      Caches
		cpus   int
		want   blocks
	}{
		{"unknown sizes: defaults", 14, 32, Caches{}, 2, def},
		{"no L2: defaults", 14, 32, Caches{L1d: 48 << 10}, 2, def},
		// nc = 512K/1536 = 341 → 352; the L3 share (508M/2) would allow any
		// mc: 4096 → 4088 (a multiple of 14).
		{"this project's machine (cpuid legacy leaves)", 14, 32,
			Caches{L1d: 48 << 10, L2: 1 << 20, L3: 1016 * 512 << 10}, 2, blocks{kc: 384, mc: 4088, nc: 352}},
		// nc = (1M/2)/2/1536 = 170 → 160; mc = (32M/16)/1536 = 1365 → 1372.
		{"Zen 5 from sysfs, SMT", 14, 32,
			Caches{L1d: 48 << 10, L2: 1 << 20, L2Sharing: 2, L3: 32 << 20, L3Sharing: 16}, 32, blocks{kc: 384, mc: 1372, nc: 160}},
		// mc = (38.5M/28)/1536 = 938.
		{"Skylake-SP", 14, 32,
			Caches{L1d: 32 << 10, L2: 1 << 20, L3: 77 << 19, L3Sharing: 28}, 28, blocks{kc: 384, mc: 938, nc: 352}},
		// nc = 128K/1536 = 85 → 80.
		{"AVX2 kernel, no L3", 6, 16, Caches{L1d: 32 << 10, L2: 256 << 10}, 4, blocks{kc: 384, mc: 4096, nc: 80}},
		{"tiny caches: lower bounds", 14, 32, Caches{L1d: 4 << 10, L2: 16 << 10, L3: 64 << 10, L3Sharing: 8}, 8, blocks{kc: 384, mc: 224, nc: 128}},
		{"huge caches: upper bounds", 14, 32, Caches{L1d: 1 << 20, L2: 1 << 30, L3: 1 << 32, L3Sharing: 1}, 1, blocks{kc: 384, mc: 4088, nc: 4096}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deriveBlocks(tc.mr, tc.nr, tc.c, tc.cpus, def)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, def.kc, got.kc, "kc, which sets the rounding, never changes")
			if tc.c.known() {
				assert.Zero(t, got.nc%tc.nr)
			}
			if tc.c.known() && tc.c.L3 > 0 {
				assert.Zero(t, got.mc%tc.mr)
			}
		})
	}
}

func TestBlockInfoString(t *testing.T) {
	b := BlockInfo{Kernel: "avx512", MR: 14, NR: 32, KC: 384, MC: 1372, NC: 160,
		Caches: Caches{L1d: 48 << 10, L2: 1 << 20, L2Sharing: 2, L3: 32 << 20, L3Sharing: 16, Source: "sysfs"}}
	assert.Equal(t, "avx512 14x32 kc=384 mc=1372 nc=160; L1d 48K L2 1M/2 L3 32M/16", b.String())
	b.Caches = Caches{L1d: 48 << 10, L2: 1 << 20, L3: 1016 * 512 << 10, Source: "cpuid legacy AMD leaves"}
	assert.Equal(t, "avx512 14x32 kc=384 mc=1372 nc=160; L1d 48K L2 1M L3 508M", b.String())
	b.Caches = Caches{L1d: 32 << 10, L2: 1280 << 10, L2Sharing: 1, Source: "cpuid leaf 4"}
	assert.Equal(t, "avx512 14x32 kc=384 mc=1372 nc=160; L1d 32K L2 1.2M", b.String())
	b.Caches = Caches{}
	assert.Equal(t, "avx512 14x32 kc=384 mc=1372 nc=160; cache sizes unknown", b.String())
}

// TestBlocking: the blocking reported is the active kernel's, derived from
// this machine's caches when they could be read.
func TestBlocking(t *testing.T) {
	b := Blocking()
	require.Equal(t, Kernel(), b.Kernel)
	assert.Equal(t, active.kc, b.KC)
	assert.Equal(t, active.mc, b.MC)
	assert.Equal(t, active.nc, b.NC)
	assert.GreaterOrEqual(t, b.KC, 1)
	t.Logf("blocking: %v (cache sizes from %q)", b, b.Caches.Source)
}

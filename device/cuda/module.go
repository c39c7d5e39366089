package cuda

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/hora-dl/hora/internal/diskcache"
)

// kernelFS holds Hora's CUDA C sources. Source returns them as the one
// translation unit NVRTC compiles: common.cuh first, then every .cu file
// in name order.
//
//go:embed kernels/*.cuh kernels/*.cu
var kernelFS embed.FS

// Source returns the CUDA C that Hora compiles for its kernels.
func Source() string {
	var b strings.Builder
	common, err := kernelFS.ReadFile("kernels/common.cuh")
	if err != nil {
		panic(err)
	}
	b.WriteString("// Hora's CUDA kernels (device/cuda/kernels), one translation unit.\n")
	b.Write(common)
	names, _ := fs.Glob(kernelFS, "kernels/*.cu")
	sort.Strings(names)
	for _, n := range names {
		src, _ := kernelFS.ReadFile(n)
		fmt.Fprintf(&b, "\n// ---- %s ----\n", n)
		b.Write(src)
	}
	return b.String()
}

// module is the loaded kernel image and its functions by name.
type module struct {
	handle uintptr
	mu     sync.Mutex
	funcs  map[string]uintptr
}

// function returns the kernel called name (on the worker goroutine).
func (m *module) function(a *driverAPI, name string) (uintptr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	var f uintptr
	if err := a.check("cuModuleGetFunction", a.cuModuleGetFunction(&f, m.handle, name)); err != nil {
		return 0, fmt.Errorf("kernel %s: %w", name, err)
	}
	m.funcs[name] = f
	return f, nil
}

func (m *module) unload(a *driverAPI) { a.cuModuleUnload(m.handle) }

// module returns d's kernels, compiling them on first use (on the worker).
func (d *Device) module() (*module, error) {
	d.modOnce.Do(func() {
		img, err := compileKernels(d.arch)
		if err != nil {
			d.modErr = err
			return
		}
		m := &module{funcs: map[string]uintptr{}}
		if err := d.api.check("cuModuleLoadData", d.api.cuModuleLoadData(&m.handle, unsafe.Pointer(&img[0]))); err != nil {
			d.modErr = fmt.Errorf("loading the compiled kernels for sm_%d: %w", d.arch, err)
			return
		}
		d.mod = m
	})
	return d.mod, d.modErr
}

var (
	nvrtcOnce sync.Once
	nvrtcLib  *nvrtcAPI
	nvrtcErr  error
)

// loadNVRTC loads NVRTC once per process.
func loadNVRTC() (*nvrtcAPI, error) {
	nvrtcOnce.Do(func() {
		h, path, err := OpenLibrary("NVRTC (libnvrtc)", nvrtcNames)
		if err != nil {
			nvrtcErr = err
			return
		}
		a := &nvrtcAPI{}
		if err := bind(h, path, a.symbols()); err != nil {
			nvrtcErr = err
			return
		}
		nvrtcLib = a
	})
	return nvrtcLib, nvrtcErr
}

// CacheDir returns the folder where compiled kernels are kept:
// $HORA_CACHE_DIR/cuda, or hora/cuda in the user's cache folder
// (~/.cache/hora/cuda; see diskcache.Dir).
func CacheDir() string { return diskcache.Dir("cuda") }

// compileOptions returns NVRTC's options for compute capability arch.
func compileOptions(arch int) []string {
	return []string{fmt.Sprintf("--gpu-architecture=sm_%d", arch), "--std=c++17", "-default-device"}
}

// compileKernels returns Source compiled for sm_arch: from the disk cache
// when this source, these options and this NVRTC version were compiled
// before, else by NVRTC (and then cached). A compile error returns NVRTC's
// log.
func compileKernels(arch int) ([]byte, error) {
	nv, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	var major, minor int32
	if err := nv.check("nvrtcVersion", nv.nvrtcVersion(&major, &minor)); err != nil {
		return nil, err
	}
	src, opts := Source(), compileOptions(arch)
	path := cachePath(src, opts, arch, major, minor)
	if img, err := os.ReadFile(path); err == nil && len(img) > 0 {
		return img, nil
	}
	img, err := nvrtcCompile(nv, src, "hora_kernels.cu", opts)
	if err != nil {
		return nil, err
	}
	writeCache(path, img)
	return img, nil
}

// cachePath names the cached image of src compiled with opts for sm_arch
// by NVRTC major.minor.
func cachePath(src string, opts []string, arch int, major, minor int32) string {
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00nvrtc %d.%d", src, strings.Join(opts, " "), major, minor)))
	return filepath.Join(CacheDir(), fmt.Sprintf("kernels-sm_%d-%s.cubin", arch, hex.EncodeToString(key[:12])))
}

// KernelsCached reports whether d's kernels are in the disk cache
// (CacheDir), so that loading them is quick; when not, the first kernel
// (or LoadKernels) compiles them, which takes seconds.
func (d *Device) KernelsCached() bool {
	nv, err := loadNVRTC()
	if err != nil {
		return false
	}
	var major, minor int32
	if nv.nvrtcVersion(&major, &minor) != 0 {
		return false
	}
	fi, err := os.Stat(cachePath(Source(), compileOptions(d.arch), d.arch, major, minor))
	return err == nil && fi.Size() > 0
}

// LoadKernels compiles (or loads from the cache) d's kernels now, rather
// than at the first kernel, and returns the error that would otherwise
// surface at the next Sync.
func (d *Device) LoadKernels() error {
	err := d.Do(func() error { _, err := d.module(); return err })
	if err != nil {
		return fmt.Errorf("%s: %w", d.name, err)
	}
	return nil
}

// writeCache stores img at path atomically (a temporary file renamed), so
// a process killed while writing leaves no partial image. Failures only
// cost a compile next time, so they are ignored.
func writeCache(path string, img []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(img)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		os.Remove(f.Name())
	}
}

// nvrtcCompile compiles src to a CUBIN with NVRTC.
func nvrtcCompile(nv *nvrtcAPI, src, name string, opts []string) ([]byte, error) {
	var prog uintptr
	if err := nv.check("nvrtcCreateProgram", nv.nvrtcCreateProgram(&prog, src, name, 0, nil, nil)); err != nil {
		return nil, err
	}
	defer nv.nvrtcDestroyProgram(&prog)
	cOpts := make([][]byte, len(opts))
	ptrs := make([]unsafe.Pointer, len(opts))
	for i, o := range opts {
		cOpts[i] = append([]byte(o), 0)
		ptrs[i] = unsafe.Pointer(&cOpts[i][0])
	}
	r := nv.nvrtcCompileProgram(prog, int32(len(ptrs)), &ptrs[0])
	if err := nv.check("nvrtcCompileProgram", r); err != nil {
		var n uintptr
		log := ""
		if nv.nvrtcGetProgramLogSize(prog, &n) == 0 && n > 1 {
			buf := make([]byte, n)
			if nv.nvrtcGetProgramLog(prog, &buf[0]) == 0 {
				log = strings.TrimRight(string(buf), "\x00\n")
			}
		}
		return nil, fmt.Errorf("compiling Hora's CUDA kernels (%s): %w\n%s", strings.Join(opts, " "), err, log)
	}
	var n uintptr
	if err := nv.check("nvrtcGetCUBINSize", nv.nvrtcGetCUBINSize(prog, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("nvrtcGetCUBIN: NVRTC produced an empty image")
	}
	img := make([]byte, n)
	if err := nv.check("nvrtcGetCUBIN", nv.nvrtcGetCUBIN(prog, &img[0])); err != nil {
		return nil, err
	}
	return img, nil
}

package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// The sonames tried for each library, newest first. The driver ships
// with the GPU driver; the others with the CUDA toolkit or with PyTorch's
// pip packages (nvidia-cublas-cu12, nvidia-cuda-nvrtc-cu12, nvidia-nccl-cu12...).
var (
	driverNames = []string{"libcuda.so.1", "libcuda.so"}
	nvrtcNames  = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
	cublasNames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
	// NCCLNames are the sonames dist/nccl tries for NCCL.
	NCCLNames = []string{"libnccl.so.2", "libnccl.so"}
)

// LibraryDirs returns the folders searched for the CUDA libraries, in
// order: those in HORA_CUDA_LIBS and LD_LIBRARY_PATH (colon-separated
// lists), the nvidia/*/lib folders of Python site-packages (where
// PyTorch's pip packages put cuBLAS, NVRTC, cuDNN and NCCL), PyTorch's own
// torch/lib, and the usual system folders. Folders that do not exist are
// left out.
func LibraryDirs() []string {
	var dirs []string
	for _, v := range []string{"HORA_CUDA_LIBS", "LD_LIBRARY_PATH"} {
		dirs = append(dirs, filepath.SplitList(os.Getenv(v))...)
	}
	for _, sp := range sitePackages() {
		nv, _ := filepath.Glob(filepath.Join(sp, "nvidia", "*", "lib"))
		sort.Strings(nv)
		dirs = append(dirs, nv...)
		dirs = append(dirs, filepath.Join(sp, "torch", "lib"))
	}
	dirs = append(dirs,
		"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
		"/usr/lib64", "/usr/lib", "/usr/lib/wsl/lib")
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// sitePackages returns the Python package folders that may hold pip's
// nvidia-* packages: the active virtual or conda environment's, that of
// each python3 on PATH (a virtual environment's bin folder on PATH, not
// activated, is how PyTorch images often ship), the user's, and the
// system's.
func sitePackages() []string {
	var roots []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			roots = append(roots, p)
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		// The environment is the folder above bin/python3; the link is not
		// followed, since a virtual environment's python3 links to the
		// system's interpreter.
		if dir == "" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, "python3")); err == nil && !fi.IsDir() {
			roots = append(roots, filepath.Dir(filepath.Clean(dir)))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".local"))
	}
	roots = append(roots, "/usr/local", "/usr", "/opt/conda")
	var out []string
	for _, r := range roots {
		for _, pattern := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "lib/python3/dist-packages"} {
			m, _ := filepath.Glob(filepath.Join(r, pattern))
			sort.Sort(sort.Reverse(sort.StringSlice(m))) // newest Python first
			out = append(out, m...)
		}
	}
	return out
}

// FindLibrary returns the path of the first of names found in dirs (every
// name tried in a folder before the next folder, so that an earlier folder
// wins), or "" and the paths it tried.
func FindLibrary(names, dirs []string) (string, []string) {
	var tried []string
	for _, d := range dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			tried = append(tried, p)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p, tried
			}
		}
	}
	return "", tried
}

// OpenLibrary loads the first of names found in LibraryDirs, or else lets
// the dynamic loader search for them (ldconfig's cache). what names the
// library in the error ("cuBLAS"), which lists the folders searched and
// says how to point Hora at the library.
func OpenLibrary(what string, names []string) (uintptr, string, error) {
	if runtime.GOOS != "linux" {
		return 0, "", fmt.Errorf("cuda: %s: CUDA is supported on Linux only, not %s", what, runtime.GOOS)
	}
	dirs := LibraryDirs()
	var errs []string
	if p, _ := FindLibrary(names, dirs); p != "" {
		h, err := dlopen(p)
		if err == nil {
			return h, p, nil
		}
		errs = append(errs, err.Error())
	}
	for _, n := range names {
		h, err := dlopen(n)
		if err == nil {
			return h, n, nil
		}
		errs = append(errs, err.Error())
	}
	return 0, "", fmt.Errorf("cuda: %s %w (tried %s in %s and the loader's path; set HORA_CUDA_LIBS to the folder that holds it): %s",
		what, ErrLibraryNotFound, strings.Join(names, ", "), strings.Join(dirs, ":"), strings.Join(errs, "; "))
}

// Library names a shared library that device/cuda or dist/nccl loads, and
// where it was found.
type Library struct {
	Name string // what it is: "driver", "NVRTC", "cuBLAS" or "NCCL"
	Path string // the file in LibraryDirs, or "" when none holds it (the dynamic loader may still find it)
}

// FindLibraries reports where each library that Hora's GPU code loads is
// found in LibraryDirs, without loading any: a check of a machine's set-up.
func FindLibraries() []Library {
	dirs := LibraryDirs()
	var out []Library
	for _, l := range []struct {
		name  string
		names []string
	}{{"driver", driverNames}, {"NVRTC", nvrtcNames}, {"cuBLAS", cublasNames}, {"NCCL", NCCLNames}} {
		p, _ := FindLibrary(l.names, dirs)
		out = append(out, Library{Name: l.name, Path: p})
	}
	return out
}

// ErrLibraryNotFound is wrapped by OpenLibrary's error when no folder and
// not the dynamic loader has the library.
var ErrLibraryNotFound = errors.New("not found")

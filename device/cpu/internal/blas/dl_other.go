//go:build !((linux || darwin || freebsd || netbsd) && (amd64 || arm64))

package blas

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"
)

// open fails: this platform has no run-time loading of a BLAS.
func open(name string) (*Library, error) {
	return nil, fmt.Errorf("%w: not supported on %s/%s", ErrNotFound, runtime.GOOS, runtime.GOARCH)
}

// callGemm is never called: no Library exists on this platform.
func callGemm(fn uintptr, p *gemmArgs, alpha, beta, a, b, c unsafe.Pointer) {
	panic("blas: not supported on " + runtime.GOOS + "/" + runtime.GOARCH)
}

func cGetenv(key string) string { return os.Getenv(key) }

func haveCEnv() bool { return false }

func setenv(key, value string) { _ = os.Setenv(key, value) }

func unsetenv(key string) { _ = os.Unsetenv(key) }

//go:build !windows

package cuda

import "github.com/ebitengine/purego"

// dlopen loads a shared library with the dynamic loader.
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// Dlsym returns the address of symbol name in the library h (as
// dlsym(3)); dist/nccl binds NCCL with it.
func Dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

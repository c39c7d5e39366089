package cuda

import "errors"

// errWindows is returned where Linux loads the CUDA libraries.
var errWindows = errors.New("cuda: loading CUDA libraries on Windows is not supported")

func dlopen(string) (uintptr, error) { return 0, errWindows }

// Dlsym returns the address of symbol name in the library h; on Windows
// it always fails.
func Dlsym(uintptr, string) (uintptr, error) { return 0, errWindows }

//go:build !(amd64 || arm64) || noasm

package gemm

// platformKernels lists the micro-kernels available: without assembly
// (another architecture, or the noasm build tag) only the pure-Go one.
func platformKernels() []*kernelInfo {
	return []*kernelInfo{goKernelInfo()}
}

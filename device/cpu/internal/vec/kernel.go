package vec

import "fmt"

// Kernel levels, in increasing order of preference.
const (
	levelGo = iota
	levelAVX2
	levelAVX512
)

var levelNames = [...]string{levelGo: "go", levelAVX2: "avx2", levelAVX512: "avx512"}

var (
	// level is the kernel set in use: the best available, chosen at init
	// (kernel_amd64.go), or forced by SetKernel.
	level = levelGo
	// available lists the levels this machine and build can run, best first.
	available = []int{levelGo}
)

// Kernel names the kernels in use: "avx512" (AVX-512F assembly), "avx2"
// (AVX2+FMA assembly) or "go" (pure Go: other architectures, the noasm build
// tag, or a CPU without AVX2/FMA).
func Kernel() string { return levelNames[level] }

// Kernels lists the kernels this machine and build can run, best first; the
// last is always "go".
func Kernels() []string {
	names := make([]string, len(available))
	for i, l := range available {
		names[i] = levelNames[l]
	}
	return names
}

// SetKernel forces the kernels named (one of Kernels()) and returns the name
// of those in use before, for tests and benchmarks that compare kernels. It
// must not be called concurrently with any other function of the package.
func SetKernel(name string) (prev string, err error) {
	for _, l := range available {
		if levelNames[l] == name {
			prev, level = Kernel(), l
			return prev, nil
		}
	}
	return Kernel(), fmt.Errorf("vec: kernel %q not available (have %v)", name, Kernels())
}

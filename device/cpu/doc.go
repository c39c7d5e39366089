// Package cpu is the CPU backend of device: buffers are Go slices and the
// kernels are pure Go, parallel over runtime.GOMAXPROCS goroutines, with
// matrix products by gonum's GEMM and convolutions by im2col + GEMM.
//
// Importing the package registers it as "cpu" (only ordinal 0 exists):
//
//	import "github.com/hora-dl/hora/device/cpu"
//
//	dev := cpu.New() // or device.Open("cpu")
//
// Results do not depend on GOMAXPROCS: work is split so that every output
// element is accumulated in the same order whatever the number of workers.
// The package passes device/devicetest.RunAll.
package cpu

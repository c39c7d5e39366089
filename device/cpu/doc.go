// Package cpu is the CPU backend of device: buffers are Go slices and the
// kernels run on one pool of worker goroutines, one per core
// (runtime.GOMAXPROCS), the calling goroutine included.
//
// Importing the package registers it as "cpu" (only ordinal 0 exists):
//
//	import "github.com/hora-dl/hora/device/cpu"
//
//	dev := cpu.New() // or device.Open("cpu")
//
// # Matrix products
//
// Float32 GEMM runs Hora's own Go-assembly kernel (internal/gemm: AVX-512,
// AVX2, or NEON on arm64; gonum where there is none) or a BLAS library
// loaded at run time without cgo (internal/blas: OpenBLAS, MKL or BLIS):
// per class of shapes, whichever was faster on this machine, measured at
// the first product and kept on disk (internal/gemmchoice). Float64 GEMM
// runs the BLAS library when there is one, else gonum. The library is set
// to one thread and called from the pool's goroutines, each on its share
// of the product, so BLAS threads and goroutines never compete for cores.
// Device.Backend describes the choice and the measurement;
// HORA_GEMM and HORA_BLAS change it (see gemmBackend). Convolutions are
// chosen per shape (linalg.go): depthwise, Winograd, the stem path (a 3×3
// stride-2 layer of up to 3 input channels, stem.go), direct, or im2col plus
// GEMM over groups of images, with a shifted-copy im2col for "same"
// convolutions. A single image's GEMM is split across the workers (bands
// of output rows, or blocks of output channels for which each worker
// unfolds the image into its own cache, convsplit.go). Kernels also
// implements device.ChannelsLastConvKernels for inference (channelslast.go):
// depthwise and 1×1 convolutions on small planes (up to 256 positions,
// MobileNet's 14×14 and 7×7 ones) with each position's channels side by
// side, where a depthwise layer is one vector multiply-add per tap for 16
// channels and a 1×1 one a product whose rows are the positions.
//
// # Fused kernels
//
// Kernels implements device.FusedKernels: bias plus activation, the
// activation's gradient, the bias gradient, softmax cross-entropy with its
// gradient, a convolution followed by bias, ReLU and max pooling whose
// output never leaves a worker's cache; device.BatchNormKernels: batch
// normalisation and its gradient (parallel over channels, a plane per
// vector loop, planes under 256 values gathered per channel first); device.LayerNormKernels and device.SoftmaxKernels: layer
// normalisation and the softmax over rows, with their gradients (parallel
// over rows); device.GELUKernels: GELU and its gradient (float32 through
// vec.Erf, a rational approximation); and device.OptimizerKernels: the
// SGD and Adam updates. Their inner loops are mostly the vectorised ones
// of internal/vec. Depthwise convolutions (MobileNet's) run directly,
// forward and backward, on padded phases of each plane (depthwise.go,
// laid out by internal/direct's row copies). 2×2 max pooling with stride 2
// runs in internal/maxpool.
//
// # Float16
//
// device.Float16 buffers hold IEEE binary16 bits in a []uint16
// (Buffer.Float16s). They are for storage and transport, as in fp16
// gradient compression: Alloc, Read, Write, Slice and the Copy kernel take
// them (Copy converts to and from the other types, rounding to nearest
// even); every other kernel panics. Float32ToFloat16 and Float16ToFloat32
// convert host slices directly.
//
// # Allocation
//
// Kernels launched with launch (the hot ones) and the scratch buffers of
// convolutions and GEMM packing are recycled, so a steady-state training
// step allocates almost nothing here.
//
// Memory one worker wrote and another then writes crosses between their
// caches. Device.SharesCache (device.CacheSharer) tells whether that is
// cheap now: it times a cache line's round trip between two workers at
// most every 250 ms, since a VM's host may move its vCPUs between cores of
// one core complex (55–90 ns) and of two (330–420 ns) every few seconds;
// onnx's inference arenas share buffers between values only while it
// reports true.
//
// # Determinism
//
// Results do not depend on GOMAXPROCS: work is split so that every output
// element is accumulated in the same order whatever the number of workers.
// The exception is a large float32 product by a BLAS library, whose blocks
// follow the number of workers (a large matrix product, or a convolution
// whose GEMMs are fewer than the workers and are split among them): it is
// then the same from run to run for a given GOMAXPROCS. The package passes device/devicetest.RunAll.
package cpu

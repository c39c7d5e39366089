// Package cuda is Hora's NVIDIA GPU device. It registers "cuda", so that
// device.Open("cuda:1") (or a config's `device: cuda`) returns GPU 1,
// and tensors move there with tensor.To.
//
// Nothing of CUDA is needed to build it: the driver (libcuda.so.1),
// cuBLAS, and NVRTC are loaded when a GPU is first opened, with
// github.com/ebitengine/purego (no cgo, no headers). They are looked for
// in HORA_CUDA_LIBS, LD_LIBRARY_PATH, the nvidia/*/lib folders of Python
// site-packages (where PyTorch's pip packages put them), torch/lib, and
// the usual system folders (LibraryDirs); on a machine without them, Open
// returns an error wrapping device.ErrUnavailable and the rest of Hora
// runs on the CPU.
//
// # Overview
//
//   - One goroutine per GPU, locked to its OS thread, makes every driver
//     call, with the device's primary context current. All work runs in
//     order on one CUDA stream: kernels are queued and return at once; Read,
//     Write, Sync and Alloc wait. A failed launch is reported by the next
//     Sync, Read or Write, with the CUDA error's name.
//   - A caching allocator keeps freed blocks by size class and reuses them,
//     so training's steady state does not call cuMemAlloc (MemoryStats,
//     EmptyCache). Out of memory, it frees the cache and tries again.
//   - Host memory moves through a pinned staging buffer.
//   - The kernels are CUDA C in kernels/ (embedded in the binary, see
//     Source), compiled by NVRTC for the GPU's architecture on first use
//     and cached on disk (CacheDir), so later runs start at once.
//   - Matrix products use cuBLAS, with TensorFloat-32 for float32 unless
//     SetTF32(false); SetAutocast(BFloat16) or SetAutocast(device.Float16)
//     rounds their inputs to 16 bits (float32 accumulation and output, the
//     weights stay float32): mixed precision, with optim.GradScaler for
//     float16. Convolutions are im2col (col2im) kernels and cuBLAS.
//   - Device also implements device.Slicer, and its kernels
//     device.FusedKernels, device.BatchNormKernels,
//     device.OptimizerKernels, device.MultiStepKernels (one launch per 32
//     parameters of a group) and the other optional kernel sets of the CPU
//     device.
//
// dist/nccl runs collectives on these buffers with NCCL.
//
// # Testing without a GPU
//
// The package's tests run against an emulator (cudaemu): fake
// libcuda, NVRTC and cuBLAS built with g++, which compile the same CUDA C
// for the CPU and run it there, block by block and thread by thread. Every
// kernel is checked by device/devicetest against the reference
// definitions the CPU device passes. HORA_CUDA_TEST=gpu (make test-gpu)
// runs the same tests on a real GPU.
package cuda

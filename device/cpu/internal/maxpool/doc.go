// Package maxpool holds the kernels of the most common max poolings:
//
//   - Plane2x2: a 2×2 window with stride 2 and no padding, with the
//     position of each maximum (for the backward pass), one plane per
//     call. On amd64 with AVX-512 it pools 16 windows of a row per step in
//     assembly; elsewhere, and for steps holding a NaN, it runs in Go. Both
//     give the same numbers and positions to the bit.
//   - Values3s2: 3-wide windows with stride 2 (ResNet's stem), values
//     only (inference), one output row per call, 16 windows per step in
//     AVX-512 (8 in AVX2 on CPUs without it, the last few in Go) with
//     Go's max semantics (a NaN wins; +0 over -0).
package maxpool

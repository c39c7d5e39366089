// Package maxpool holds the kernel of the most common max pooling, a 2×2
// window with stride 2 and no padding, with the position of each maximum
// (for the backward pass): Plane2x2 pools one plane. On amd64 with
// AVX-512 it pools 16 windows of a row per step in assembly, a whole plane
// per call; elsewhere, and for steps holding a NaN, it runs in Go. Both
// give the same numbers and positions to the bit.
package maxpool

// Package norm holds batch normalization's float32 kernels over one
// channel of an N×C×H×W tensor where it lies: the channel's planes are
// rows rows of cols values, ld apart (ld = C·H·W, cols = H·W), and each
// kernel runs over all of them in one call, without gathering them side by
// side first.
//
// The statistics of the forward pass are two passes, the mean (Sum) and
// then the mean squared deviation from it (SumSqDev); the normalisation
// and its activation are one more (ScaleShift). The gradient is two passes:
// the sums Σg and Σg·(x-mean) of the output gradient g after the
// activation's gradient (GradSums), then dx from them (GradApply). A pass
// over a channel of a batch of 7×7 planes reads 128 rows of 196 bytes, so
// the later passes find it in cache.
//
// Sums are taken in float32 lanes over at most 256 values of a row and
// added in float64. On amd64 with AVX-512 the kernels run in assembly
// (one call for all rows, masked loads and stores for the last vector of
// a row); with AVX2 only, in AVX2 assembly over each row's whole vectors
// of 8, the last cols mod 8 values of each row in Go; elsewhere in Go,
// with the same order of operations within an element (the sums' partial
// sums differ).
package norm

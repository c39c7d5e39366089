// Package gemmchoice decides by measurement which float32 matrix-product
// implementation a CPU runs, per class of shapes, and keeps the decision on
// disk.
//
// Hora's own GEMM kernel beats OpenBLAS on some processors and loses on
// others (measured: 1.03–1.13× on AMD Zen 5, 0.81–0.84× on an Intel
// Cascade Lake at the same sizes), and the answer differs between small,
// skinny and large products. Rather than guess from the CPU's name, Measure
// times both implementations on a few products of each Class, the way the
// CPU device calls them (one thread each, alpha 1, beta 0), checks that
// they agree, and picks the faster per class. Cached stores the result in a
// JSON file under a key naming the processor, the kernels and the library,
// so that only the first process on a machine pays for the measurement
// (about half a second); processes starting together wait for the first
// one's result instead of measuring at once.
package gemmchoice

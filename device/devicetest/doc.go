// Package devicetest is a conformance suite for implementations of
// device.Device, in the manner of gonum's testblas: every backend's tests
// call RunAll with an open device, and each Kernels method is checked
// against a plain reference loop (the method's doc comment) computed in
// float64 by this package.
//
// The smallest use, in a backend's _test.go file:
//
//	func TestConformance(t *testing.T) { devicetest.RunAll(t, cpu.New()) }
//
// Float32 results must agree with the reference to a relative error of
// about 1e-5 and float64 results to about 1e-12, relative to the magnitude
// of the terms that make up each result (so sums that cancel are judged by
// the size of what was summed).
//
// Memory and Copy are also checked in device.Float16 when the device's
// Alloc accepts it, and Slice when the device is a device.Slicer.
package devicetest

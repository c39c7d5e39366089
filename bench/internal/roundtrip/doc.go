// Package roundtrip times a cache line's round trip between two busy
// threads of the benchmarks' process. On a virtual machine whose vCPUs
// the host moves between cores it tells apart the states that change
// the benchmarks' numbers: on this project's 2 Zen 5 vCPUs about 80 ns
// while the two shared a cache, 380–400 ns while they did not, when
// both frameworks' times, and Hora's against the other framework's, were
// not the same (see BENCHMARKS.md, 2026-11-28, the eighteenth session).
// `make bench` and `make bench-onnx` print it after each measurement.
package roundtrip

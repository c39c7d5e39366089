// Package diskcache locates Hora's per-user cache folder and serialises
// processes that fill the same cache entry.
//
// Things that are slow to produce and depend only on the machine (compiled
// CUDA kernels, the measured choice of GEMM library) are kept under Dir's
// folder, so that the next process finds them. Lock makes concurrent
// processes (the ranks of one job on one host) wait for the first one
// instead of all doing the same work.
package diskcache

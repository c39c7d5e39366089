// Package fuzzbound bounds the time one fuzz input may take, so that an
// input that makes a parser or importer slow (a nesting or alias bomb, a
// loop count from the file) is reported as a finding, with the input
// saved by the fuzzer, instead of stalling the fuzzing run until its
// overall timeout.
//
// A fuzz target wraps its body:
//
//	f.Fuzz(func(t *testing.T, b []byte) {
//		fuzzbound.Run(t, fuzzbound.PerInput, func() { _, _ = Parse(b) })
//	})
package fuzzbound

//go:build !linux

package cpu

// osYield does nothing where the pool has no portable way to yield its
// thread's CPU; polling still ends after spinTime.
func osYield() {}

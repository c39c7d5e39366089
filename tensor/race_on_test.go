//go:build race

package tensor_test

// raceEnabled tells that the race detector, which allocates, is on.
const raceEnabled = true

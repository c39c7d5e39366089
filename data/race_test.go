//go:build race

package data

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true

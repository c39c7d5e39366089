package data

import "testing"

func TestMemoryLeft(t *testing.T) {
	n, ok := memoryLeft()
	if !ok || n <= 0 {
		t.Fatalf("memoryLeft() = %d, %v; want a positive estimate on Linux", n, ok)
	}
}

package cpu

import "testing"

// TestScratchClass checks the size classes of the scratch buffers: a
// class's buffers hold any request of that class, are at most 25% larger
// than the request (beyond the smallest class), and give back the class
// they were taken from.
func TestScratchClass(t *testing.T) {
	var sizes []int
	for n := 1; n <= 1<<16; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 1<<20, 1<<20+1, 3<<24, 1<<31-1)
	prevClass := 0
	for _, n := range sizes {
		class, size := scratchClass(n)
		if size < n {
			t.Fatalf("scratchClass(%d) = size %d: smaller than asked", n, size)
		}
		if n > scratchMinSize && 4*size > 5*n+4 {
			t.Fatalf("scratchClass(%d) = size %d: more than 25%% larger", n, size)
		}
		if c, s := scratchClass(size); c != class || s != size {
			t.Fatalf("scratchClass(%d) = (%d, %d), but scratchClass(%d) = (%d, %d)", n, class, size, size, c, s)
		}
		if class < 0 || class >= scratchClasses {
			t.Fatalf("scratchClass(%d) = class %d: outside [0, %d)", n, class, scratchClasses)
		}
		if class < prevClass {
			t.Fatalf("scratchClass(%d) = class %d: below the class of a smaller size (%d)", n, class, prevClass)
		}
		prevClass = class
	}
}

// TestScratchReused checks that a buffer given back is handed out again
// for a request of its class, with the length asked for.
func TestScratchReused(t *testing.T) {
	a := getScratch[float32](1000)
	if len(a.s) != 1000 {
		t.Fatalf("len = %d, want 1000", len(a.s))
	}
	a.s[0] = 42
	putScratch(a)
	allocs := testing.AllocsPerRun(100, func() {
		b := getScratch[float32](990) // same class as 1000
		if len(b.s) != 990 {
			t.Fatalf("len = %d, want 990", len(b.s))
		}
		putScratch(b)
	})
	if allocs != 0 {
		t.Fatalf("getScratch/putScratch of one class allocated %v times per call, want 0", allocs)
	}
}

package roundtrip

import (
	"runtime"
	"testing"
	"time"
)

// TestMeasure checks that Measure returns a time per round trip (between
// a few nanoseconds and, on a loaded machine, a few milliseconds) with two
// threads, and 0 with no trips or one thread.
func TestMeasure(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if d := Measure(200); d <= 0 || d > 50*time.Millisecond {
		t.Fatalf("Measure(200) = %v on 2 threads", d)
	}
	if d := Measure(0); d != 0 {
		t.Fatalf("Measure(0) = %v, want 0", d)
	}
	runtime.GOMAXPROCS(1)
	if d := Measure(10); d != 0 {
		t.Fatalf("Measure on GOMAXPROCS 1 = %v, want 0", d)
	}
}

func ExampleMeasure() {
	d := Measure(10000)
	if d > 0 {
		println("a cache line's round trip between two threads:", d.String())
	}
}

// TestState checks the states State tells apart.
func TestState(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                     "one thread",
		60 * time.Nanosecond:  "shared cache",
		199 * time.Nanosecond: "shared cache",
		200 * time.Nanosecond: "no shared cache",
		390 * time.Nanosecond: "no shared cache",
	} {
		if got := State(d); got != want {
			t.Errorf("State(%v) = %q, want %q", d, got, want)
		}
	}
}

package fuzzbound

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a T that records the failure instead of ending the test.
type recorder struct{ failed string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestFastInputPasses(t *testing.T) {
	var r recorder
	ran := false
	Run(&r, time.Second, func() { ran = true })
	if !ran || r.failed != "" {
		t.Fatalf("ran %v, failure %q; want ran and no failure", ran, r.failed)
	}
}

func TestSlowInputFails(t *testing.T) {
	var r recorder
	release := make(chan struct{})
	defer close(release)
	Run(&r, 20*time.Millisecond, func() { <-release })
	if !strings.Contains(r.failed, "longer than 20ms") {
		t.Fatalf("failure %q, want one naming the 20ms limit", r.failed)
	}
}

func TestPanicReachesCaller(t *testing.T) {
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(fmt.Sprint(p), "boom") {
			t.Fatalf("recovered %v, want the body's panic", p)
		}
	}()
	var r recorder
	Run(&r, time.Second, func() { panic("boom") })
	t.Fatal("Run returned after a panic")
}

func ExampleRun() {
	// t is the *testing.T of a fuzz target; recorder stands in for it here.
	var t recorder
	Run(&t, PerInput, func() { fmt.Println("parsed one input") })
	// Output: parsed one input
}

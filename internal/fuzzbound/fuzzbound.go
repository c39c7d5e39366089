package fuzzbound

import (
	"fmt"
	"runtime"
	"time"
)

// PerInput is the time one fuzz input may take before it fails the
// target. It is generous (several fuzz workers share the cores, and
// coverage instrumentation slows the code); an input near it is already
// a denial of service for a user.
const PerInput = 10 * time.Second

// T is the part of testing.TB that Run needs.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Run calls body and fails t when it takes longer than limit, naming the
// limit. A panic in body is re-raised on the caller's goroutine, so the
// fuzzer reports it as it would without Run. The goroutine of a body that
// ran too long cannot be stopped; the fuzzer ends the process after the
// failure anyway.
func Run(t T, limit time.Duration, body func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				done <- fmt.Sprintf("%v\n%s", p, buf)
				return
			}
			done <- nil
		}()
		body()
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case p := <-done:
		if p != nil {
			panic(p)
		}
	case <-timer.C:
		t.Fatalf("one input took longer than %v: a slow input is a finding (the input is saved in testdata/fuzz)", limit)
	}
}

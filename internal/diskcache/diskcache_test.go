package diskcache

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDir(t *testing.T) {
	t.Setenv("HORA_CACHE_DIR", "/some/where")
	if got, want := Dir("cuda"), filepath.Join("/some/where", "cuda"); got != want {
		t.Errorf("Dir with HORA_CACHE_DIR = %q, want %q", got, want)
	}
	t.Setenv("HORA_CACHE_DIR", "")
	if got := Dir("gemm"); !strings.HasSuffix(got, filepath.Join("hora", "gemm")) && !strings.Contains(got, "hora-cache-") {
		t.Errorf("Dir without HORA_CACHE_DIR = %q, want a hora/gemm folder", got)
	}
}

// TestLockExcludes checks that a second holder waits for the first.
func TestLockExcludes(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("flock exclusion is checked on Linux")
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock := Lock(path)
	var mu sync.Mutex
	var order []string
	done := make(chan struct{})
	go func() {
		// A second open file description: flock excludes it like another
		// process.
		u := Lock(path)
		mu.Lock()
		order = append(order, "second")
		mu.Unlock()
		u()
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	order = append(order, "first releases")
	mu.Unlock()
	unlock()
	<-done
	if strings.Join(order, ",") != "first releases,second" {
		t.Errorf("order %v: the second Lock did not wait for the first", order)
	}
}

// TestLockUnopenable checks that a lock file that cannot be created does
// not block or fail.
func TestLockUnopenable(t *testing.T) {
	unlock := Lock(filepath.Join(t.TempDir(), "missing", "dir", "x.lock"))
	unlock()
}

package gemmchoice

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// counter returns a measure function that counts its calls and returns a
// valid choice with the library chosen for large products.
func counter() (func() Choice, *int) {
	var mu sync.Mutex
	n := 0
	return func() Choice {
		mu.Lock()
		n++
		mu.Unlock()
		var ch Choice
		for cl := range ch.Classes {
			ch.Classes[cl] = Result{Own: 100, BLAS: 90}
		}
		ch.Classes[Large] = Result{Own: 100, BLAS: 150, UseBLAS: true}
		return ch
	}, &n
}

func TestCachedMeasuresOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "gemm-choice.json")
	measure, calls := counter()
	ch, src, err := Cached(path, "cpu A", false, measure)
	if err != nil || src != Measured || *calls != 1 || !ch.Classes[Large].UseBLAS {
		t.Fatalf("first Cached: %v, source %v, %d measurements, %v", ch.String(), src, *calls, err)
	}
	ch, src, err = Cached(path, "cpu A", false, measure)
	if err != nil || src != FromCache || *calls != 1 || !ch.Classes[Large].UseBLAS || ch.Classes[Small].UseBLAS {
		t.Fatalf("second Cached: %v, source %v, %d measurements, %v", ch.String(), src, *calls, err)
	}
	if _, src, _ = Cached(path, "cpu A", true, measure); src != Measured || *calls != 2 {
		t.Errorf("remeasure: source %v, %d measurements", src, *calls)
	}
	if _, src, _ = Cached(path, "cpu B", false, measure); src != Measured || *calls != 3 {
		t.Errorf("another key: source %v, %d measurements", src, *calls)
	}
	if _, src, _ = Cached(path, "cpu A", false, measure); src != FromCache || *calls != 3 {
		t.Errorf("the first key after adding another: source %v, %d measurements", src, *calls)
	}
}

func TestCachedReplacesBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"not json":        "{{{",
		"another format":  `{"format": 99, "entries": {"k": {}}}`,
		"no entries":      `{"format": 1}`,
		"negative speeds": `{"format": 1, "entries": {"k": {"choice": {"classes": [{"own_gflops": -1, "blas_gflops": 1}, {"own_gflops": 1, "blas_gflops": 1}, {"own_gflops": 1, "blas_gflops": 1}]}}}}`,
		"empty":           "",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gemm-choice.json")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			measure, calls := counter()
			if _, src, err := Cached(path, "k", false, measure); err != nil || src != Measured || *calls != 1 {
				t.Fatalf("Cached over a bad file: source %v, %d measurements, %v", src, *calls, err)
			}
			if _, src, _ := Cached(path, "k", false, measure); src != FromCache {
				t.Errorf("the bad file was not replaced: source %v", src)
			}
		})
	}
}

// TestCachedNeverReplacesOtherFiles checks that a path naming a folder, a
// symbolic link or a device is not written over; the measured choice is
// still returned, with the reason.
func TestCachedNeverReplacesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder.json")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := []string{link, folder}
	if _, err := os.Stat("/dev/null"); err == nil && os.Getuid() != 0 {
		paths = append(paths, "/dev/null")
	}
	for _, path := range paths {
		measure, _ := counter()
		ch, src, err := Cached(path, "k", false, measure)
		if err == nil || src != Measured || !ch.Classes[Large].UseBLAS {
			t.Errorf("%s: source %v, error %v; want the measured choice and an error", path, src, err)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "keep me" {
		t.Errorf("the symbolic link's target was changed to %q", data)
	}
	if info, err := os.Stat(folder); err != nil || !info.IsDir() {
		t.Errorf("the folder was replaced: %v", err)
	}
}

// TestCachedConcurrent checks that callers starting together measure once.
func TestCachedConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemm-choice.json")
	measure, calls := counter()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := Cached(path, "k", false, measure); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if *calls != 1 {
		t.Errorf("%d measurements by 4 concurrent callers, want 1", *calls)
	}
}

func TestCachedKeepsTheNewestEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemm-choice.json")
	measure, _ := counter()
	for i := range maxEntries + 5 {
		if _, _, err := Cached(path, fmt.Sprint("key ", i), false, measure); err != nil {
			t.Fatal(err)
		}
	}
	f := readCache(path)
	if len(f.Entries) != maxEntries {
		t.Errorf("%d entries, want %d", len(f.Entries), maxEntries)
	}
	if _, ok := f.Entries[fmt.Sprint("key ", maxEntries+4)]; !ok {
		t.Error("the newest entry was dropped")
	}
}

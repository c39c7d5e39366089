package gemmchoice

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hora-dl/hora/internal/diskcache"
)

// cacheFile is the JSON file Cached keeps choices in.
type cacheFile struct {
	Format  int              `json:"format"`
	Entries map[string]entry `json:"entries"`
}

// entry is one stored choice.
type entry struct {
	Measured time.Time `json:"measured"`
	Choice   Choice    `json:"choice"`
}

const (
	// format is the version of the file's layout; a file of another
	// version is measured over.
	format = 1
	// maxEntries bounds the file: the oldest entries go first.
	maxEntries = 32
	// maxFileSize bounds what is read: a larger file is not a cache Hora
	// wrote, and is measured over.
	maxFileSize = 1 << 20
)

// Source says where a choice came from.
type Source int

const (
	// FromCache: read from the file.
	FromCache Source = iota
	// Measured: measured now (and stored, unless Cached returned an error).
	Measured
)

// Cached returns the choice stored in the file path under key, or, when
// there is none, a valid one cannot be read, or remeasure is set, the
// result of measure, which it then stores under key (keeping the file's
// other entries). Processes calling Cached with the same path wait for
// each other (a lock file beside path), so that one measures and the
// others read its result. The error says why the choice could not be
// stored; the choice is good even then.
func Cached(path, key string, remeasure bool, measure func() Choice) (Choice, Source, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return measure(), Measured, err
	}
	unlock := diskcache.Lock(path + ".lock")
	defer unlock()
	f := readCache(path)
	if e, ok := f.Entries[key]; ok && !remeasure && e.Choice.valid() {
		return e.Choice, FromCache, nil
	}
	ch := measure()
	f.Entries[key] = entry{Measured: time.Now().UTC(), Choice: ch}
	f.trim()
	return ch, Measured, writeCache(path, f)
}

// readCache reads the file at path; a missing, unreadable, oversized or
// malformed file, or one of another format, reads as an empty cache (it is
// replaced on the next write).
func readCache(path string) cacheFile {
	empty := cacheFile{Format: format, Entries: map[string]entry{}}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxFileSize {
		return empty
	}
	fh, err := os.Open(path)
	if err != nil {
		return empty
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFileSize+1))
	if err != nil || len(data) > maxFileSize {
		return empty
	}
	var f cacheFile
	if json.Unmarshal(data, &f) != nil || f.Format != format || f.Entries == nil {
		return empty
	}
	return f
}

// trim drops the oldest entries beyond maxEntries.
func (f *cacheFile) trim() {
	if len(f.Entries) <= maxEntries {
		return
	}
	keys := make([]string, 0, len(f.Entries))
	for k := range f.Entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return f.Entries[keys[i]].Measured.After(f.Entries[keys[j]].Measured) })
	for _, k := range keys[maxEntries:] {
		delete(f.Entries, k)
	}
}

// writeCache replaces the file at path with f, through a temporary file
// renamed over it, and only when path is a regular file or does not exist.
func writeCache(path string, f cacheFile) error {
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%v), not replaced", path, info.Mode().Type())
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gemm-choice-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

//go:build unix

package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockRunDir takes the exclusive lock of the run folder dir (flock on
// dir/.lock, which records the holder's PID), so that a second train or
// resume into the same folder fails at once instead of mixing its
// metrics, log and checkpoints with the first's. The lock lasts until
// unlock is called or the process ends, however it ends.
func lockRunDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output.dir: cannot lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUseError(dir)
		}
		return nil, fmt.Errorf("output.dir: cannot lock %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// checkNotInUse returns the error of lockRunDir when another process
// holds the lock of the run folder dir, without taking it or creating
// anything: a new run checks it before it judges what the folder holds.
func checkNotInUse(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil // no lock file: nobody has held it
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		return inUseError(dir)
	}
	return nil // the shared lock goes with f
}

// inUseError says which process holds the run folder dir.
func inUseError(dir string) error {
	path := filepath.Join(dir, lockFile)
	holder := "another process"
	if b, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			holder = fmt.Sprintf("process %d", pid)
		}
	}
	return fmt.Errorf("output.dir: %s is in use: %s is training into it (it holds %s); wait for it to end, or choose another folder", dir, holder, path)
}

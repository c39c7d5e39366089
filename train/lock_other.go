//go:build !unix

package train

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockRunDir marks the run folder dir as in use by creating dir/.lock
// exclusively, where flock is missing; a lock left by a process that
// crashed must be removed by hand (the error says so).
func lockRunDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return nil, fmt.Errorf("output.dir: %s is in use by another process (it holds %s; remove that file if no process trains there)", dir, path)
		}
		return nil, fmt.Errorf("output.dir: cannot lock %s: %w", dir, err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close(); os.Remove(path) }, nil
}

// checkNotInUse reports an error when the run folder dir holds the lock
// file of another process.
func checkNotInUse(dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, lockFile)); err == nil {
		return fmt.Errorf("output.dir: %s is in use by another process (it holds %s; remove that file if no process trains there)", dir, filepath.Join(dir, lockFile))
	}
	return nil
}

package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/tensor"
)

// ckptRelManifest is a plausible manifest of a checkpoint at step.
func ckptRelManifest(step int) manifest {
	return manifest{Model: "mlp", Step: step, Epoch: 1, EpochOffset: 32 * step, WorldSize: 1, BatchSize: 32,
		Passes: 1, Threads: 1, Seed: 1, RNG: "00", LR: 0.1}
}

// ckptRelWrite writes small checkpoints of the given steps in the run
// folder run and returns the folder of the last.
func ckptRelWrite(t *testing.T, run string, steps ...int) string {
	t.Helper()
	var dir string
	for _, step := range steps {
		files := map[string]map[string]*tensor.Tensor{
			modelFile:     {"fc.weight": tensor.FromFloat32([]float32{1, 2}, 2)},
			optimizerFile: {"step": tensor.FromInt64([]int64{int64(step)})},
		}
		var err error
		dir, err = writeCheckpoint(run, ckptRelManifest(step), files)
		require.NoError(t, err)
	}
	return dir
}

// ckptRelEditManifest rewrites the manifest of the checkpoint in dir
// through its JSON object, so that a test can put any value in it.
func ckptRelEditManifest(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, manifestFile)
	js, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(js, &m))
	edit(m)
	js, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, js, 0o644))
}

// ckptRelEntry returns the manifest entry of the file at path, as JSON.
func ckptRelEntry(t *testing.T, path string) map[string]any {
	t.Helper()
	d, err := digest(path)
	require.NoError(t, err)
	return map[string]any{"size": d.Size, "sha256": d.SHA256}
}

// ckptRelFiles returns the "files" object of a manifest being edited.
func ckptRelFiles(m map[string]any) map[string]any { return m["files"].(map[string]any) }

// ckptRelWithin runs f and fails the test when it takes longer than two
// seconds (a read that blocks on a named pipe or reads /dev/zero).
func ckptRelWithin(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatalf("%s did not return within 2 s (it blocks on a named pipe or reads without end)", what)
	}
}

// TestCkptRelManifestNamesStayInFolder: a manifest's file names must be
// plain names of regular files inside the checkpoint's folder: "..",
// absolute paths, separators, symbolic links leading out, named pipes,
// devices and directories are refused, naming the manifest and the
// entry, without opening them (a named pipe must not block).
func TestCkptRelManifestNamesStayInFolder(t *testing.T) {
	const notPlain = " is not the name of a file in the checkpoint folder: "
	tests := []struct {
		name string
		// entry makes the entry's file, if any, and returns the entry's
		// name; want is the error after "MANIFEST: files: entry NAME".
		entry func(t *testing.T, run, dir string) string
		want  func(run, dir string) string
	}{
		{"dot-dot", func(t *testing.T, run, dir string) string { return "../../secret.safetensors" },
			func(run, dir string) string { return notPlain + "it holds a path separator" }},
		{"absolute", func(t *testing.T, run, dir string) string { return filepath.Join(run, "secret.safetensors") },
			func(run, dir string) string { return notPlain + "it is an absolute path" }},
		{"parent", func(t *testing.T, run, dir string) string { return ".." },
			func(run, dir string) string { return notPlain + "it names a folder" }},
		{"sub-folder", func(t *testing.T, run, dir string) string { return "sub/model.safetensors" },
			func(run, dir string) string { return notPlain + "it holds a path separator" }},
		{"link out", func(t *testing.T, run, dir string) string {
			require.NoError(t, os.Symlink(filepath.Join("..", "..", "secret.safetensors"), filepath.Join(dir, "link.safetensors")))
			return "link.safetensors"
		}, func(run, dir string) string {
			return ": " + filepath.Join(dir, "link.safetensors") + " resolves to " + filepath.Join(run, "secret.safetensors") + ", outside the folder " + dir
		}},
		{"link to a device", func(t *testing.T, run, dir string) string {
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.safetensors")))
			return "zero.safetensors"
		}, func(run, dir string) string {
			return ": " + filepath.Join(dir, "zero.safetensors") + " resolves to /dev/zero, outside the folder " + dir
		}},
		{"named pipe", func(t *testing.T, run, dir string) string {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.safetensors"), 0o644))
			return "fifo.safetensors"
		}, func(run, dir string) string {
			return ": " + filepath.Join(dir, "fifo.safetensors") + " is a named pipe (FIFO), not a regular file"
		}},
		{"directory", func(t *testing.T, run, dir string) string {
			require.NoError(t, os.Mkdir(filepath.Join(dir, "folder.safetensors"), 0o755))
			return "folder.safetensors"
		}, func(run, dir string) string {
			return ": " + filepath.Join(dir, "folder.safetensors") + " is a directory, not a regular file"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			dir := ckptRelWrite(t, run, 5)
			// A file outside the checkpoint, listed with its true digest.
			secret := []byte("not yours")
			require.NoError(t, os.WriteFile(filepath.Join(run, "secret.safetensors"), secret, 0o644))
			name := tc.entry(t, run, dir)
			d := digestBytes(secret)
			ckptRelEditManifest(t, dir, func(m map[string]any) {
				ckptRelFiles(m)[name] = map[string]any{"size": d.Size, "sha256": d.SHA256}
			})
			want := filepath.Join(dir, manifestFile) + ": files: entry " + jsonQuote(name) + tc.want(run, dir)
			for _, verify := range []bool{false, true} {
				var err error
				ckptRelWithin(t, "readManifest", func() { _, err = readManifest(dir, verify) })
				require.Error(t, err, "verify %v", verify)
				assert.Equal(t, want, err.Error(), "verify %v", verify)
			}
			var err error
			ckptRelWithin(t, "findCheckpoint", func() { _, err = findCheckpoint(run, "step-5") })
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			ckptRelWithin(t, "latestCheckpoint", func() {
				_, ok, skipped, err := latestCheckpoint(run, true)
				require.NoError(t, err)
				assert.False(t, ok, "the checkpoint is not used")
				require.Len(t, skipped, 1)
				assert.Contains(t, skipped[0], want)
			})
		})
	}
}

// jsonQuote quotes s as %q does (the tests' names are plain ASCII).
func jsonQuote(s string) string {
	js, _ := json.Marshal(s)
	return string(js)
}

// TestCkptRelManifestIsRegularFile: a manifest.json that is a named pipe
// or a link to a device is refused at once, and listing the checkpoints
// does not block.
func TestCkptRelManifestIsRegularFile(t *testing.T) {
	for _, tc := range []struct {
		kind string
		make func(path string) error
		want string
	}{
		{"fifo", func(path string) error { return syscall.Mkfifo(path, 0o644) }, "is a named pipe (FIFO), not a regular file"},
		{"zero", func(path string) error { return os.Symlink("/dev/zero", path) }, "resolves to /dev/zero, outside the folder"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			run := t.TempDir()
			dir := ckptRelWrite(t, run, 5)
			path := filepath.Join(dir, manifestFile)
			require.NoError(t, os.Remove(path))
			require.NoError(t, tc.make(path))
			ckptRelWithin(t, "listCheckpoints", func() {
				found, skipped, err := listCheckpoints(run)
				require.NoError(t, err)
				assert.Empty(t, found)
				require.Len(t, skipped, 1)
				assert.Contains(t, skipped[0], path+" "+tc.want)
			})
		})
	}
}

// TestCkptRelManifestNumbers: a manifest whose numbers are impossible (an
// epoch below 1, a negative step, a step that is not its folder's...) is
// refused when it is read, naming the manifest and the field.
func TestCkptRelManifestNumbers(t *testing.T) {
	tests := []struct {
		field string
		value any
		want  string
	}{
		{"epoch", 0, "epoch: 0, expected a number ≥ 1"},
		{"epoch", -3, "epoch: -3, expected a number ≥ 1"},
		{"step", -1, "step: -1, expected a step number ≥ 0"},
		{"step", 6, "step: 6, but the checkpoint's folder step-00000005 is of step 5"},
		{"epoch_offset", -1, "epoch_offset: -1, expected a number ≥ 0"},
		{"world_size", 0, "world_size: 0, expected a number ≥ 1"},
		{"batch_size", 0, "batch_size: 0, expected a number ≥ 1"},
		{"passes", 0, "passes: 0, expected a number ≥ 1"},
		{"threads", -1, "threads: -1, expected a number ≥ 0"},
		{"bad_evals", -2, "bad_evals: -2, expected a number ≥ 0"},
		{"epoch_seconds", -1, "epoch_seconds: -1, expected a number ≥ 0"},
		{"lr", -0.5, "lr: -0.5, expected a number ≥ 0"},
		{"epoch_sums", []float64{1, -2, 0}, "epoch_sums: [1 -2 0], expected non-negative sample and correct counts"},
		{"model", "", "model: missing, expected the name of the model"},
		{"format", 2, "format 2, expected 1"},
		{"epoch", "one", "json: cannot unmarshal string into Go struct field manifest.epoch of type int"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s=%v", tc.field, tc.value), func(t *testing.T) {
			run := t.TempDir()
			dir := ckptRelWrite(t, run, 5)
			ckptRelEditManifest(t, dir, func(m map[string]any) { m[tc.field] = tc.value })
			_, err := readManifest(dir, true)
			require.Error(t, err)
			assert.Equal(t, filepath.Join(dir, manifestFile)+": "+tc.want, err.Error())
			_, err = findCheckpoint(run, "step-5")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = findCheckpoint(run, "last")
			require.Error(t, err, "no valid checkpoint is left")
			assert.Contains(t, err.Error(), tc.want, "the error says why the checkpoint was skipped")
		})
	}

	t.Run("a manifest entry's size and digest", func(t *testing.T) {
		run := t.TempDir()
		dir := ckptRelWrite(t, run, 5)
		ckptRelEditManifest(t, dir, func(m map[string]any) {
			ckptRelFiles(m)[modelFile].(map[string]any)["sha256"] = "../../etc/passwd"
		})
		_, err := readManifest(dir, false)
		require.Error(t, err)
		assert.Equal(t, filepath.Join(dir, manifestFile)+`: files: entry "model.safetensors": sha256 "../../etc/passwd", expected 64 lowercase hexadecimal digits`, err.Error())
	})
}

// TestCkptRelManifestListsRequiredFiles: every file a restore needs must
// be listed with its digest; a manifest without the model's entry (or the
// optimizer's) is refused instead of loading an unchecked file.
func TestCkptRelManifestListsRequiredFiles(t *testing.T) {
	for _, name := range requiredFiles {
		t.Run(name, func(t *testing.T) {
			run := t.TempDir()
			dir := ckptRelWrite(t, run, 5)
			ckptRelEditManifest(t, dir, func(m map[string]any) { delete(ckptRelFiles(m), name) })
			want := filepath.Join(dir, manifestFile) + ": files: no entry for " + name +
				": every file of a checkpoint must be listed with its size and SHA-256"
			for _, verify := range []bool{false, true} {
				_, err := readManifest(dir, verify)
				require.Error(t, err)
				assert.Equal(t, want, err.Error())
			}
			_, ok, skipped, err := latestCheckpoint(run, true)
			require.NoError(t, err)
			assert.False(t, ok)
			require.Len(t, skipped, 1)
			assert.Contains(t, skipped[0], want)
		})
	}
}

// ckptRelBest writes best.json of run with the given content.
func ckptRelBest(t *testing.T, run, content string) string {
	t.Helper()
	path := filepath.Join(run, checkpointsDir, bestFile)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// TestCkptRelBestIsOfThisRun: best.json must name a checkpoint folder of
// this run; a path to another run's checkpoint, or a link to one, is
// refused with an input error naming best.json and what it holds.
func TestCkptRelBestIsOfThisRun(t *testing.T) {
	parent := t.TempDir()
	run, other := filepath.Join(parent, "run"), filepath.Join(parent, "other-run")
	ckptRelWrite(t, run, 5)
	ckptRelWrite(t, other, 100)

	path := ckptRelBest(t, run, `{"checkpoint": "../../other-run/checkpoints/step-00000100", "metric": "test_accuracy", "value": 0.9, "step": 100}`)
	_, err := findCheckpoint(run, "best")
	require.Error(t, err)
	assert.Equal(t, path+`: checkpoint "../../other-run/checkpoints/step-00000100" is not the name of a checkpoint folder of this run (expected a name like step-00001200)`, err.Error())
	assert.True(t, errors.As(err, new(inputError)), "an input error")
	abs := filepath.Join(other, checkpointsDir, "step-00000100")
	ckptRelBest(t, run, `{"checkpoint": "`+abs+`", "metric": "test_accuracy", "value": 0.9, "step": 100}`)
	_, err = findCheckpoint(run, "best")
	require.Error(t, err)
	assert.Equal(t, path+`: checkpoint "`+abs+`" is not the name of a checkpoint folder of this run (expected a name like step-00001200)`, err.Error())

	// A link in this run's checkpoints folder to the other run's checkpoint.
	link := filepath.Join(run, checkpointsDir, "step-00000100")
	require.NoError(t, os.Symlink(filepath.Join(other, checkpointsDir, "step-00000100"), link))
	ckptRelBest(t, run, `{"checkpoint": "step-00000100", "metric": "test_accuracy", "value": 0.9, "step": 100}`)
	_, err = findCheckpoint(run, "best")
	require.Error(t, err)
	assert.Equal(t, path+`: checkpoint "step-00000100": `+link+" resolves to "+filepath.Join(other, checkpointsDir, "step-00000100")+
		", which is not a checkpoint folder of this run (in "+filepath.Join(run, checkpointsDir)+")", err.Error())
	_, err = findCheckpoint(run, "step-100")
	require.Error(t, err, "nor by its name")

	// The record's step must be its checkpoint's.
	ckptRelBest(t, run, `{"checkpoint": "step-00000005", "metric": "test_accuracy", "value": 0.9, "step": 7}`)
	_, err = findCheckpoint(run, "best")
	require.Error(t, err)
	assert.Equal(t, path+`: step 7, but checkpoint "step-00000005" is of step 5`, err.Error())

	ckptRelBest(t, run, `{"checkpoint": "step-00000005", "metric": "test_accuracy", "value": 0.9, "step": 5}`)
	c, err := findCheckpoint(run, "best")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(run, checkpointsDir, "step-00000005"), c.Dir)
}

// TestCkptRelCorruptBest: a corrupt best.json (not JSON, a named pipe, a
// directory) is an input error naming the file, and reading it does not
// block.
func TestCkptRelCorruptBest(t *testing.T) {
	run := t.TempDir()
	ckptRelWrite(t, run, 5)
	path := ckptRelBest(t, run, `{"checkpoint": "step-000`)
	_, err := readBest(run)
	require.Error(t, err)
	assert.Equal(t, path+": not a valid record of the best checkpoint: unexpected end of JSON input", err.Error())
	assert.True(t, errors.As(err, new(inputError)), "an input error")
	assert.Equal(t, exitInput, exitCode(err, new(strings.Builder)))

	require.NoError(t, os.Remove(path))
	require.NoError(t, syscall.Mkfifo(path, 0o644))
	ckptRelWithin(t, "readBest", func() { _, err = readBest(run) })
	require.Error(t, err)
	assert.Equal(t, path+" is a named pipe (FIFO), not a regular file", err.Error())
	assert.True(t, errors.As(err, new(inputError)), "an input error")
	require.Error(t, pruneCheckpoints(run, 1), "pruning does not guess which checkpoint is the best")
}

// TestCkptRelPruneIsCrashSafe: pruning renames a checkpoint to a hidden
// ".deleting-" name before deleting its files, so a kill in the middle
// leaves no half-deleted "step-N" folder; removeIncomplete, at the next
// start, deletes what is left.
func TestCkptRelPruneIsCrashSafe(t *testing.T) {
	run := t.TempDir()
	ckptRelWrite(t, run, 5, 10, 15)
	root := filepath.Join(run, checkpointsDir)

	defer func(old func(int, string)) { faultHook = old }(faultHook)
	killed := errors.New("killed")
	faultHook = func(step int, phase string) {
		if strings.HasPrefix(phase, "removing ") {
			// Half of the files are gone when the process dies.
			require.NoError(t, os.Remove(filepath.Join(root, deletingPrefix+checkpointName(step), modelFile)))
			panic(killed)
		}
	}
	func() {
		defer func() { assert.Equal(t, killed, recover(), "the removal reached the fault") }()
		_ = pruneCheckpoints(run, 1)
	}()
	faultHook = nil

	assert.NoDirExists(t, filepath.Join(root, "step-00000005"), "no half-deleted checkpoint is left in sight")
	assert.DirExists(t, filepath.Join(root, ".deleting-step-00000005"))
	found, skipped, err := listCheckpoints(run)
	require.NoError(t, err)
	assert.Empty(t, skipped, "nothing looks like a broken checkpoint")
	require.Len(t, found, 2)

	removed, err := removeIncomplete(run)
	require.NoError(t, err)
	assert.Equal(t, []string{".deleting-step-00000005"}, removed)
	require.NoError(t, pruneCheckpoints(run, 1))
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "step-00000015", entries[0].Name())
}

// TestCkptRelRemoveIncompleteHalfDeleted: the leftovers of interrupted
// writes (".step-N.tmp") and removals (".deleting-step-N") are both
// removed at the start of a run; a checkpoint written again over an
// existing one of the same step leaves neither behind.
func TestCkptRelRemoveIncompleteHalfDeleted(t *testing.T) {
	run := t.TempDir()
	ckptRelWrite(t, run, 5, 10)
	root := filepath.Join(run, checkpointsDir)
	half := filepath.Join(root, ".deleting-step-00000002")
	require.NoError(t, os.Mkdir(half, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(half, optimizerFile), []byte("half"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, ".step-00000011.tmp"), 0o755))

	removed, err := removeIncomplete(run)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{".deleting-step-00000002", ".step-00000011.tmp"}, removed)
	assert.NoDirExists(t, half)

	ckptRelWrite(t, run, 10) // replaces the checkpoint of step 10
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"step-00000005", "step-00000010"}, names)
	_, err = readManifest(filepath.Join(root, "step-00000010"), true)
	assert.NoError(t, err)
}

// TestCkptRelAtomicWriteOnlyReplacesRegularFiles: writeFileAtomic
// replaces a regular file, and refuses a symbolic link, a named pipe, a
// directory, a socket or a device, naming the path and what it is,
// leaving it as it was. A link planted under the temporary file's name is
// not written through.
func TestCkptRelAtomicWriteOnlyReplacesRegularFiles(t *testing.T) {
	tests := []struct {
		kind  string
		make  func(t *testing.T, path string)
		root  bool
		check func(t *testing.T, path string) // the target is intact
	}{
		{"symbolic link", func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "target.json")
			require.NoError(t, os.WriteFile(target, []byte("keep"), 0o644))
			require.NoError(t, os.Symlink(target, path))
		}, false, func(t *testing.T, path string) {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "target.json"))
			require.NoError(t, err)
			assert.Equal(t, "keep", string(b))
		}},
		{"named pipe (FIFO)", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) }, false, nil},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, false, nil},
		{"socket", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
		}, false, nil},
		{"character device", func(t *testing.T, path string) {
			require.NoError(t, syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|3)) // like /dev/null
		}, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("creating a device node needs root")
			}
			// A short folder name: a socket's path is limited to 108 bytes.
			dir, err := os.MkdirTemp("", "ckptrel")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			path := filepath.Join(dir, "best.json")
			tc.make(t, path)
			before, err := os.Lstat(path)
			require.NoError(t, err)
			err = writeFileAtomic(path, []byte("{}\n"))
			require.Error(t, err)
			assert.Equal(t, "refusing to replace "+path+": it is a "+tc.kind+", not a regular file", err.Error())
			after, err := os.Lstat(path)
			require.NoError(t, err)
			assert.Equal(t, before.Mode(), after.Mode(), "left as it was")
			assert.NoFileExists(t, filepath.Join(dir, ".best.json.tmp"))
			if tc.check != nil {
				tc.check(t, path)
			}
		})
	}

	t.Run("regular file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "best.json")
		require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
		require.NoError(t, writeFileAtomic(path, []byte("new")))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "new", string(b))
	})

	t.Run("link under the temporary name", func(t *testing.T) {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
		require.NoError(t, os.Symlink(victim, filepath.Join(dir, ".best.json.tmp")))
		path := filepath.Join(dir, "best.json")
		require.NoError(t, writeFileAtomic(path, []byte("new")))
		b, err := os.ReadFile(victim)
		require.NoError(t, err)
		assert.Equal(t, "keep", string(b), "the link's target is not written")
		b, err = os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "new", string(b))
	})

	t.Run("writeBest", func(t *testing.T) {
		run := t.TempDir()
		ckptRelWrite(t, run, 5)
		path := filepath.Join(run, checkpointsDir, bestFile)
		require.NoError(t, syscall.Mkfifo(path, 0o644))
		err := writeBest(run, bestRecord{Checkpoint: "step-00000005", Step: 5})
		require.Error(t, err)
		assert.Equal(t, "refusing to replace "+path+": it is a named pipe (FIFO), not a regular file", err.Error())
	})
}

// ckptRelTrainedRun trains a tiny run (one epoch of 5 steps, evaluated,
// so with a best checkpoint) and returns its folder.
func ckptRelTrainedRun(t *testing.T) string {
	t.Helper()
	data := syntheticFashion(t, 160, 40)
	out := t.TempDir()
	code, stdout, stderr := runTrain(t, "-config", "../configs/fashion-mnist-mlp.yaml", "-set", "data.dir="+data,
		"-set", "model.hidden=[8]", "-set", "train.epochs=1", "-set", "train.batch_size=32", "-set", "train.threads=1",
		"-set", "output.plot=false", "-q", "-out", out)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	b, err := readBest(out)
	require.NoError(t, err)
	require.Equal(t, "step-00000005", b.Checkpoint)
	return out
}

// TestCkptRelEvalRefusesBadCheckpoints runs the eval command on copies of
// a trained run whose checkpoint was tampered with: each is refused with
// exit status 2 and a message naming the file and the problem, where the
// checkpoint used to be loaded (or the process to hang).
func TestCkptRelEvalRefusesBadCheckpoints(t *testing.T) {
	trained := ckptRelTrainedRun(t)
	ckpt := func(run string) string { return filepath.Join(run, checkpointsDir, "step-00000005") }
	tests := []struct {
		name   string
		which  string
		tamper func(t *testing.T, run string)
		want   string // in stderr; RUN is the run folder
	}{
		{"entry outside the folder", "step-5", func(t *testing.T, run string) {
			ckptRelEditManifest(t, ckpt(run), func(m map[string]any) {
				ckptRelFiles(m)["../../config.yaml"] = ckptRelEntry(t, filepath.Join(run, "config.yaml"))
			})
		}, `RUN/checkpoints/step-00000005/manifest.json: files: entry "../../config.yaml" is not the name of a file in the checkpoint folder: it holds a path separator`},
		{"best of another run", "best", func(t *testing.T, run string) {
			other := filepath.Join(filepath.Dir(run), "other")
			require.NoError(t, os.CopyFS(other, os.DirFS(trained)))
			ckptRelBest(t, run, `{"checkpoint": "`+other+`/checkpoints/step-00000005", "metric": "test_accuracy", "value": 1, "step": 5}`)
		}, `RUN/checkpoints/best.json: checkpoint "RUN/../other/checkpoints/step-00000005" is not the name of a checkpoint folder of this run`},
		{"corrupt best", "best", func(t *testing.T, run string) {
			ckptRelBest(t, run, `{"checkpoint": 5`)
		}, `RUN/checkpoints/best.json: not a valid record of the best checkpoint`},
		{"epoch 0", "step-5", func(t *testing.T, run string) {
			ckptRelEditManifest(t, ckpt(run), func(m map[string]any) { m["epoch"] = 0 })
		}, `RUN/checkpoints/step-00000005/manifest.json: epoch: 0, expected a number ≥ 1`},
		{"model not listed", "last", func(t *testing.T, run string) {
			ckptRelEditManifest(t, ckpt(run), func(m map[string]any) { delete(ckptRelFiles(m), modelFile) })
		}, `RUN/checkpoints/step-00000005/manifest.json: files: no entry for model.safetensors`},
		{"extra tensor", "step-5", func(t *testing.T, run string) {
			path := filepath.Join(ckpt(run), modelFile)
			ts, meta, err := checkpoint.Load(path)
			require.NoError(t, err)
			ts["fc9.weight"] = tensor.FromFloat32([]float32{1, 2, 3}, 3)
			require.NoError(t, checkpoint.Save(path, ts, meta))
			ckptRelEditManifest(t, ckpt(run), func(m map[string]any) { ckptRelFiles(m)[modelFile] = ckptRelEntry(t, path) })
		}, `RUN/checkpoints/step-00000005/model.safetensors: the file holds tensor "fc9.weight", which is not among the`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			require.NoError(t, os.CopyFS(run, os.DirFS(trained)))
			tc.tamper(t, run)
			var code int
			var stdout, stderr string
			ckptRelWithin(t, "eval", func() { code, stdout, stderr = runTrain(t, "eval", "-run", run, "-checkpoint", tc.which) })
			assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			want := strings.ReplaceAll(tc.want, "RUN/..", filepath.Dir(run))
			assert.Contains(t, stderr, strings.ReplaceAll(want, "RUN", run))
		})
	}
}

// TestCkptRelResumeCorruptBestIsInputError: a run resumed with a corrupt
// best.json stops with exit status 2 (bad input) and a message naming the
// file, when it next writes a checkpoint.
func TestCkptRelResumeCorruptBestIsInputError(t *testing.T) {
	run := ckptRelTrainedRun(t)
	path := ckptRelBest(t, run, "\x00garbage")
	code, stdout, stderr := runTrain(t, "resume", "-run", run, "-set", "train.epochs=2", "-q")
	assert.Equal(t, exitInput, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, path+": not a valid record of the best checkpoint")
}

package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/internal/filekind"
	"github.com/hora-dl/hora/tensor"
)

// Checkpoints live in DIR/checkpoints, one folder per checkpoint named
// after its optimizer step ("step-00001200"). A folder holds the tensors
// as safetensors files and manifest.json, which says where training was
// and lists each file with its size and SHA-256.
//
// A checkpoint is written into a hidden folder (".step-00001200.tmp"),
// every file synced, the manifest last; then the folder is renamed into
// place and the parent synced. A process killed at any moment (kill -9
// included) leaves either the complete folder or a hidden one, which
// the next run removes: the last complete checkpoint is never damaged.
const (
	checkpointsDir = "checkpoints"
	manifestFile   = "manifest.json"
	bestFile       = "best.json"
	manifestFormat = 1
)

// Names of the files of a checkpoint.
const (
	modelFile     = "model.safetensors"
	optimizerFile = "optimizer.safetensors"
	emaFile       = "ema.safetensors"
)

// requiredFiles are the files that every checkpoint lists in its
// manifest: a restore needs them all (the weight average is optional).
var requiredFiles = []string{modelFile, optimizerFile}

// Limits on the JSON files of a run folder, so that a corrupt or hostile
// file cannot make a reader allocate without bound. A manifest holds a
// language model's vocabulary (at most a few MB).
const (
	maxManifestBytes = 64 << 20
	maxBestBytes     = 1 << 20
)

// deletingPrefix marks a checkpoint folder that is being removed: the
// folder "step-N" is renamed ".deleting-step-N" (durably) before its
// files are deleted, so that a process killed in the middle leaves a
// hidden folder, which listCheckpoints ignores and removeIncomplete
// finishes deleting, never a half-deleted "step-N".
const deletingPrefix = ".deleting-"

// manifest is the JSON description of one checkpoint: everything beyond
// the tensors that an exact resume needs.
type manifest struct {
	Format int    `json:"format"`
	Model  string `json:"model"`
	// Step is the number of optimizer steps taken.
	Step int `json:"step"`
	// Epoch is the epoch in progress (1-based) and EpochOffset how many
	// samples of its global order have been trained on (by all ranks
	// together); a checkpoint at the end of epoch e says e+1 and 0.
	Epoch       int `json:"epoch"`
	EpochOffset int `json:"epoch_offset"`
	// EpochSums are the training loss sum, sample count and correct
	// count of the epoch in progress, summed over ranks, and
	// EpochSeconds its training time so far.
	EpochSums    [3]float64 `json:"epoch_sums"`
	EpochSeconds float64    `json:"epoch_seconds"`
	// WorldSize, BatchSize and Passes describe the run that wrote it: the
	// number of ranks, the batch per rank and the backward passes per
	// step.
	WorldSize int `json:"world_size"`
	BatchSize int `json:"batch_size"`
	Passes    int `json:"passes"`
	// Threads is the CPU thread count of each rank (deterministic runs
	// resume with the same).
	Threads int    `json:"threads"`
	Seed    uint64 `json:"seed"`
	// RNG is the state of the generator of dropout and other random
	// layers (math/rand/v2 PCG, MarshalBinary, hex).
	RNG string `json:"rng"`
	// LR is the base learning rate when it was written.
	LR float64 `json:"lr"`
	// Best is the best value of BestMetric so far and BadEvals the number
	// of evaluations since it last improved (early stopping).
	BestMetric string   `json:"best_metric"`
	Best       *float64 `json:"best,omitempty"`
	BadEvals   int      `json:"bad_evals"`
	// Eval holds the metrics of the latest evaluation, if any.
	Eval map[string]float64 `json:"eval,omitempty"`
	// Vocab is the characters of a language model's vocabulary, in order.
	Vocab string `json:"vocab,omitempty"`
	// Files lists the tensor files with their size and SHA-256.
	Files map[string]fileDigest `json:"files"`
	Time  string                `json:"time"`
}

// fileDigest is the size and SHA-256 of one file of a checkpoint.
type fileDigest struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// savedCheckpoint is a complete checkpoint found on disk.
type savedCheckpoint struct {
	Dir      string // its folder
	Manifest manifest
	// Files holds the contents of the tensor files, by name, once read
	// (readFiles) or received from rank 0; nil before.
	Files map[string][]byte
}

// readFiles reads the checkpoint's tensor files into c.Files, checking
// each against the manifest's size and SHA-256. Each file must be a
// regular file inside the checkpoint's folder (checkpointFile).
func (c *savedCheckpoint) readFiles() error {
	manifestPath := filepath.Join(c.Dir, manifestFile)
	c.Files = make(map[string][]byte, len(c.Manifest.Files))
	for _, name := range sortedNames(c.Manifest.Files) {
		want := c.Manifest.Files[name]
		path := filepath.Join(c.Dir, name)
		real, st, err := checkpointFile(c.Dir, manifestPath, name)
		if err != nil {
			return err
		}
		if st.Size() != want.Size {
			return fmt.Errorf("%s: %d bytes, the manifest says %d", path, st.Size(), want.Size)
		}
		f, err := openSame(real, st)
		if err != nil {
			return err
		}
		b := make([]byte, want.Size)
		_, err = io.ReadFull(f, b)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := checkFileBytes(path, b, want); err != nil {
			return err
		}
		c.Files[name] = b
	}
	return nil
}

// sortedNames returns the file names of a manifest in sorted order, so
// that errors do not depend on the map's order.
func sortedNames(files map[string]fileDigest) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// checkFileBytes compares a file's contents with its manifest entry.
func checkFileBytes(path string, b []byte, want fileDigest) error {
	return compareDigest(path, digestBytes(b), want)
}

// compareDigest reports a file whose size or SHA-256 is not the
// manifest's.
func compareDigest(path string, got, want fileDigest) error {
	if got != want {
		return fmt.Errorf("%s: size %d sha256 %s, the manifest says size %d sha256 %s", path, got.Size, got.SHA256, want.Size, want.SHA256)
	}
	return nil
}

// digestBytes returns the size and SHA-256 of b.
func digestBytes(b []byte) fileDigest {
	sum := sha256.Sum256(b)
	return fileDigest{Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// checkpointName is the folder name of the checkpoint at step.
func checkpointName(step int) string { return fmt.Sprintf("step-%08d", step) }

// folderStep returns the step that a checkpoint folder's name says
// ("step-00001200" and "step-1200" say 1200), or ok false for a name of
// another form.
func folderStep(name string) (step int, ok bool) {
	digits, found := strings.CutPrefix(name, "step-")
	if !found || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false
	}
	return n, true
}

// plainNameProblem says why name cannot name a file directly inside a
// folder, or returns "" when it can.
func plainNameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return "it is an absolute path"
	case name == "." || name == "..":
		return "it names a folder"
	case strings.ContainsAny(name, `/\`):
		return "it holds a path separator"
	case strings.ContainsRune(name, 0):
		return "it holds a NUL byte"
	}
	return ""
}

// resolveInside resolves the symbolic links of path and of the folder
// root and returns path's real location and its information. It fails,
// naming path, when the real location is outside root's, or is not a
// regular file (a directory, a named pipe, a device...): nothing is
// opened, so a named pipe cannot block the caller.
func resolveInside(root, path string) (string, fs.FileInfo, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", nil, err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, err
	}
	if !isInside(realRoot, real) {
		return "", nil, fmt.Errorf("%s resolves to %s, outside the folder %s", path, real, realRoot)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if !st.Mode().IsRegular() {
		if real != path {
			return "", nil, fmt.Errorf("%s (resolved to %s) is %s, not a regular file", path, real, filekind.Of(st.Mode()))
		}
		return "", nil, fmt.Errorf("%s is %s, not a regular file", path, filekind.Of(st.Mode()))
	}
	return real, st, nil
}

// isInside reports whether the clean absolute or relative path p is root
// or lies under it.
func isInside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// checkpointFile checks the entry name of the manifest at manifestPath,
// which lists the files of the checkpoint folder dir: name must be a
// plain file name, and the file a regular file whose real location is
// inside dir's. It returns the real path and the file's information;
// errors name the manifest and the entry.
func checkpointFile(dir, manifestPath, name string) (string, fs.FileInfo, error) {
	if why := plainNameProblem(name); why != "" {
		return "", nil, fmt.Errorf("%s: files: entry %q is not the name of a file in the checkpoint folder: %s", manifestPath, name, why)
	}
	real, st, err := resolveInside(dir, filepath.Join(dir, name))
	if err != nil {
		return "", nil, fmt.Errorf("%s: files: entry %q: %w", manifestPath, name, err)
	}
	return real, st, nil
}

// openSame opens the file at path, which resolveInside described as st,
// and checks that it is still that file (without blocking on a named pipe
// swapped in meanwhile: filekind.OpenRegular).
func openSame(path string, st fs.FileInfo) (*os.File, error) {
	f, now, err := filekind.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	if !os.SameFile(st, now) {
		f.Close()
		return nil, fmt.Errorf("%s was replaced while it was being opened", path)
	}
	return f, nil
}

// readSmallFile reads the regular file path, which must lie inside the
// folder root once symbolic links are resolved and hold at most limit
// bytes.
func readSmallFile(root, path string, limit int64) ([]byte, error) {
	real, st, err := resolveInside(root, path)
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d that such a file can hold", path, st.Size(), limit)
	}
	f, err := openSame(real, st)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than the %d bytes that such a file can hold", path, limit)
	}
	return b, nil
}

// faultHook, when set (by tests, through HORA_FAULT), is called between
// the phases of a checkpoint write or removal with the step and the
// phase name.
var faultHook func(step int, phase string)

// writeCheckpoint writes the checkpoint of m with the given tensor files
// under runDir/checkpoints and returns its folder. A checkpoint of the
// same step that already exists is replaced.
func writeCheckpoint(runDir string, m manifest, files map[string]map[string]*tensor.Tensor) (string, error) {
	root := filepath.Join(runDir, checkpointsDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	name := checkpointName(m.Step)
	tmp := filepath.Join(root, "."+name+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	meta := map[string]string{"model": m.Model, "step": strconv.Itoa(m.Step), "epoch": strconv.Itoa(m.Epoch), "format": "pt"}
	m.Files = map[string]fileDigest{}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		path := filepath.Join(tmp, f)
		if err := checkpoint.Save(path, files[f], meta); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("checkpoint: %w", err)
		}
		d, err := digest(path)
		if err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("checkpoint: %w", err)
		}
		m.Files[f] = d
		if faultHook != nil {
			faultHook(m.Step, "wrote "+f)
		}
	}
	m.Format = manifestFormat
	m.Time = time.Now().UTC().Format(time.RFC3339)
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := writeFileSync(filepath.Join(tmp, manifestFile), append(js, '\n')); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if faultHook != nil {
		faultHook(m.Step, "before rename")
	}
	final := filepath.Join(root, name)
	// An older checkpoint of the same step is first moved out of the way
	// under a hidden name, so that a kill never leaves it half deleted.
	doomed := ""
	if _, err := os.Lstat(final); err == nil {
		if doomed, err = hideForRemoval(root, name); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		if doomed != "" {
			os.Rename(doomed, final) // the old checkpoint stays in place
		}
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := syncDir(root); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if doomed != "" {
		if err := os.RemoveAll(doomed); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	return final, nil
}

// hideForRemoval renames the entry name of the checkpoints folder root to
// its hidden ".deleting-" name, syncs root so that the rename survives a
// crash, and returns the new path. Deleting the files comes after: a
// process killed then leaves only a hidden folder, which
// removeIncomplete deletes at the next start.
func hideForRemoval(root, name string) (string, error) {
	doomed := filepath.Join(root, deletingPrefix+name)
	// A leftover of an earlier, interrupted removal of the same name.
	if err := os.RemoveAll(doomed); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(root, name), doomed); err != nil {
		return "", err
	}
	if err := syncDir(root); err != nil {
		return "", err
	}
	return doomed, nil
}

// digest returns the size and SHA-256 of the file at path.
func digest(path string) (fileDigest, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileDigest{}, err
	}
	defer f.Close()
	return digestFile(path, f)
}

// digestFile returns the size and SHA-256 of the open file f at path.
func digestFile(path string, f *os.File) (fileDigest, error) {
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fileDigest{}, fmt.Errorf("%s: %w", path, err)
	}
	return fileDigest{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// writeFileSync creates the file path, which must not exist yet, writes
// data to it and syncs it to the disk. Creating exclusively means that
// data never goes through a symbolic link or into a named pipe or device
// planted under that name.
func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// checkReplaceable fails when path exists and is not a regular file: an
// atomic write renames a new file over its target, which must only ever
// replace a regular file (never a device, a named pipe, a symbolic link,
// a directory or a socket).
func checkReplaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("refusing to replace %s: it is %s, not a regular file", path, filekind.Of(st.Mode()))
	}
	return nil
}

// writeFileAtomic writes data to path so that path holds either its old
// contents or all of data, even after a crash: it writes a temporary
// file beside path (".NAME.tmp"), syncs it, renames it over path and
// syncs the folder. It only replaces a regular file: when path exists
// and is anything else (a symbolic link, a directory, a named pipe, a
// device, a socket) it returns the error "refusing to replace PATH: it
// is a KIND, not a regular file" and changes nothing.
func writeFileAtomic(path string, data []byte) error {
	if err := checkReplaceable(path); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	// The leftover of an interrupted write goes first (a symbolic link
	// there is removed, not followed): writeFileSync creates a new file.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := writeFileSync(tmp, data); err != nil {
		os.Remove(tmp)
		return err
	}
	// Checked again just before the rename, in case path appeared since.
	if err := checkReplaceable(path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir syncs a folder, so that the names created in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// check validates the manifest read from path, of the checkpoint folder
// named folder: the numbers a restore uses must be possible (a step that
// is the folder's, an epoch from 1...), and every file a restore needs
// must be listed with a plain name, a size and a SHA-256. Errors name
// the manifest and the field.
func (m *manifest) check(path, folder string) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", path, field, fmt.Sprintf(format, args...))
	}
	if m.Format != manifestFormat {
		return fmt.Errorf("%s: format %d, expected %d", path, m.Format, manifestFormat)
	}
	if m.Model == "" {
		return bad("model", "missing, expected the name of the model")
	}
	if m.Step < 0 {
		return bad("step", "%d, expected a step number ≥ 0", m.Step)
	}
	if n, ok := folderStep(folder); ok && n != m.Step {
		return bad("step", "%d, but the checkpoint's folder %s is of step %d", m.Step, folder, n)
	}
	for _, f := range []struct {
		name     string
		value, a int
	}{
		{"epoch", m.Epoch, 1},
		{"epoch_offset", m.EpochOffset, 0},
		{"world_size", m.WorldSize, 1},
		{"batch_size", m.BatchSize, 1},
		{"passes", m.Passes, 1},
		{"threads", m.Threads, 0},
		{"bad_evals", m.BadEvals, 0},
	} {
		if f.value < f.a {
			return bad(f.name, "%d, expected a number ≥ %d", f.value, f.a)
		}
	}
	if m.EpochSums[1] < 0 || m.EpochSums[2] < 0 {
		return bad("epoch_sums", "%v, expected non-negative sample and correct counts", m.EpochSums)
	}
	if m.EpochSeconds < 0 {
		return bad("epoch_seconds", "%v, expected a number ≥ 0", m.EpochSeconds)
	}
	if m.LR < 0 {
		return bad("lr", "%v, expected a number ≥ 0", m.LR)
	}
	for _, name := range sortedNames(m.Files) {
		d := m.Files[name]
		if why := plainNameProblem(name); why != "" {
			return bad("files", "entry %q is not the name of a file in the checkpoint folder: %s", name, why)
		}
		if d.Size < 0 {
			return bad("files", "entry %q: size %d, expected a number ≥ 0", name, d.Size)
		}
		if len(d.SHA256) != sha256.Size*2 || strings.Trim(d.SHA256, "0123456789abcdef") != "" {
			return bad("files", "entry %q: sha256 %q, expected %d lowercase hexadecimal digits", name, d.SHA256, sha256.Size*2)
		}
	}
	for _, name := range requiredFiles {
		if _, ok := m.Files[name]; !ok {
			return bad("files", "no entry for %s: every file of a checkpoint must be listed with its size and SHA-256", name)
		}
	}
	return nil
}

// readManifest reads and checks the checkpoint in dir: the manifest must
// parse and hold possible values (manifest.check), and every file it
// lists must be a regular file inside dir with its recorded size (and,
// when verify is set, its SHA-256).
func readManifest(dir string, verify bool) (manifest, error) {
	var m manifest
	path := filepath.Join(dir, manifestFile)
	js, err := readSmallFile(dir, path, maxManifestBytes)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(js, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if err := m.check(path, filepath.Base(filepath.Clean(dir))); err != nil {
		return m, err
	}
	for _, f := range sortedNames(m.Files) {
		want := m.Files[f]
		p := filepath.Join(dir, f)
		real, st, err := checkpointFile(dir, path, f)
		if err != nil {
			return m, err
		}
		if st.Size() != want.Size {
			return m, fmt.Errorf("%s: %d bytes, the manifest says %d", p, st.Size(), want.Size)
		}
		if !verify {
			continue
		}
		file, err := openSame(real, st)
		if err != nil {
			return m, err
		}
		got, err := digestFile(p, file)
		file.Close()
		if err != nil {
			return m, err
		}
		if err := compareDigest(p, got, want); err != nil {
			return m, err
		}
	}
	return m, nil
}

// listCheckpoints returns the complete checkpoints of a run, oldest
// first. Folders that are not complete checkpoints are skipped; skipped
// lists why, for the log. Hidden folders (interrupted writes and
// removals) and symbolic links are not checkpoints.
func listCheckpoints(runDir string) (found []savedCheckpoint, skipped []string, err error) {
	root := filepath.Join(runDir, checkpointsDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "step-") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		m, err := readManifest(dir, false)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", dir, err))
			continue
		}
		found = append(found, savedCheckpoint{Dir: dir, Manifest: m})
	}
	slices.SortFunc(found, func(a, b savedCheckpoint) int { return a.Manifest.Step - b.Manifest.Step })
	return found, skipped, nil
}

// latestCheckpoint returns the newest complete checkpoint of a run whose
// files match their digests, or ok false when there is none. With load,
// the files are read once, for their digests and into c.Files (to
// restore from); otherwise they are only hashed.
func latestCheckpoint(runDir string, load bool) (c savedCheckpoint, ok bool, skipped []string, err error) {
	all, skipped, err := listCheckpoints(runDir)
	if err != nil {
		return c, false, skipped, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if load {
			err = all[i].readFiles()
		} else {
			_, err = readManifest(all[i].Dir, true)
		}
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", all[i].Dir, err))
			continue
		}
		return all[i], true, skipped, nil
	}
	return c, false, skipped, nil
}

// findCheckpoint resolves a -checkpoint argument: "last" (the newest
// complete checkpoint), "best", a checkpoint folder name (step-00001200)
// or a path to a checkpoint folder. A checkpoint named by its folder's
// name ("best" included) must be a folder of this run: its real location
// is inside the run's checkpoints folder.
func findCheckpoint(runDir, which string) (savedCheckpoint, error) {
	root := filepath.Join(runDir, checkpointsDir)
	from := "" // where the name comes from, for errors
	switch which {
	case "", "last":
		c, ok, skipped, err := latestCheckpoint(runDir, false)
		if err != nil {
			return c, err
		}
		if !ok {
			msg := fmt.Sprintf("%s: no complete checkpoint in %s", runDir, root)
			if len(skipped) > 0 {
				msg += " (skipped " + strings.Join(skipped, "; ") + ")"
			}
			return c, errors.New(msg)
		}
		return c, nil
	case "best":
		b, err := readBest(runDir)
		if err != nil {
			return savedCheckpoint{}, err
		}
		if b.Checkpoint == "" {
			return savedCheckpoint{}, fmt.Errorf("%s: no best checkpoint yet (%s has none)", runDir, filepath.Join(root, bestFile))
		}
		which = b.Checkpoint
		from = fmt.Sprintf("%s: checkpoint %q: ", filepath.Join(root, bestFile), which)
	}
	dir := which
	if !strings.ContainsAny(which, `/\`) {
		// "step-99", "99" and "step-00000099" name the same checkpoint.
		if n, err := strconv.Atoi(strings.TrimPrefix(which, "step-")); err == nil && n >= 0 {
			which = checkpointName(n)
		}
		dir = filepath.Join(root, which)
		if _, err := os.Stat(dir); err != nil || which == "." || which == ".." {
			all, _, _ := listCheckpoints(runDir)
			names := make([]string, len(all))
			for i, c := range all {
				names[i] = filepath.Base(c.Dir)
			}
			return savedCheckpoint{}, fmt.Errorf("%s%s: no checkpoint %s (found: %s; or last, best)", from, root, which, strings.Join(names, ", "))
		}
		if err := checkInsideRun(root, dir); err != nil {
			return savedCheckpoint{}, fmt.Errorf("%s%w", from, err)
		}
	}
	m, err := readManifest(dir, true)
	if err != nil {
		if from == "" {
			from = "checkpoint " + which + ": "
		}
		return savedCheckpoint{}, fmt.Errorf("%s%w", from, err)
	}
	return savedCheckpoint{Dir: dir, Manifest: m}, nil
}

// checkInsideRun fails when the checkpoint folder dir, named inside the
// run's checkpoints folder root, is really elsewhere (a symbolic link to
// another run's checkpoint).
func checkInsideRun(root, dir string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == "." || rel == ".." || strings.ContainsAny(rel, `/\`) {
		return fmt.Errorf("%s resolves to %s, which is not a checkpoint folder of this run (in %s)", dir, real, realRoot)
	}
	return nil
}

// bestRecord is the content of checkpoints/best.json.
type bestRecord struct {
	Checkpoint string  `json:"checkpoint"`
	Metric     string  `json:"metric"`
	Value      float64 `json:"value"`
	Step       int     `json:"step"`
}

// readBest reads the run's best.json (a zero record when there is none).
// The record must name a checkpoint of this run by its folder name
// ("step-00001200", its step the record's): a corrupt or foreign record
// is an input error naming the file.
func readBest(runDir string) (bestRecord, error) {
	var b bestRecord
	root := filepath.Join(runDir, checkpointsDir)
	path := filepath.Join(root, bestFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	js, err := readSmallFile(root, path, maxBestBytes)
	if err != nil {
		return b, inputError{err}
	}
	if err := json.Unmarshal(js, &b); err != nil {
		return bestRecord{}, inputError{fmt.Errorf("%s: not a valid record of the best checkpoint: %w", path, err)}
	}
	if b.Checkpoint == "" {
		return b, nil
	}
	n, ok := folderStep(b.Checkpoint)
	if !ok || checkpointName(n) != b.Checkpoint {
		return bestRecord{}, inputError{fmt.Errorf("%s: checkpoint %q is not the name of a checkpoint folder of this run (expected a name like %s)", path, b.Checkpoint, checkpointName(1200))}
	}
	if b.Step != n {
		return bestRecord{}, inputError{fmt.Errorf("%s: step %d, but checkpoint %q is of step %d", path, b.Step, b.Checkpoint, n)}
	}
	return b, nil
}

// writeBest replaces the run's best.json with b.
func writeBest(runDir string, b bestRecord) error {
	js, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(runDir, checkpointsDir, bestFile), append(js, '\n'))
}

// pruneCheckpoints removes the checkpoints of a run but the newest keep
// and the best. Each is first renamed to a hidden name (hideForRemoval),
// so that a kill in the middle leaves nothing that looks like a
// checkpoint, and removeIncomplete finishes the removal.
func pruneCheckpoints(runDir string, keep int) error {
	all, _, err := listCheckpoints(runDir)
	if err != nil {
		return err
	}
	best, err := readBest(runDir)
	if err != nil {
		return err
	}
	root := filepath.Join(runDir, checkpointsDir)
	for i, c := range all {
		name := filepath.Base(c.Dir)
		if i >= len(all)-keep || name == best.Checkpoint {
			continue
		}
		doomed, err := hideForRemoval(root, name)
		if err != nil {
			return err
		}
		if faultHook != nil {
			faultHook(c.Manifest.Step, "removing "+name)
		}
		if err := os.RemoveAll(doomed); err != nil {
			return err
		}
	}
	return nil
}

// removeIncomplete deletes the hidden folders that interrupted checkpoint
// writes (".step-N.tmp") and removals (".deleting-step-N") left behind,
// and returns their names.
func removeIncomplete(runDir string) ([]string, error) {
	root := filepath.Join(runDir, checkpointsDir)
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		name := e.Name()
		interrupted := strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") && len(name) > len("..tmp")
		if interrupted || strings.HasPrefix(name, deletingPrefix) {
			if err := os.RemoveAll(filepath.Join(root, name)); err != nil {
				return removed, err
			}
			removed = append(removed, name)
		}
	}
	return removed, nil
}

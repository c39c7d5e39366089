package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hora-dl/hora/checkpoint"
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
// each against the manifest's size and SHA-256.
func (c *savedCheckpoint) readFiles() error {
	c.Files = make(map[string][]byte, len(c.Manifest.Files))
	for name, want := range c.Manifest.Files {
		path := filepath.Join(c.Dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := checkFileBytes(path, b, want); err != nil {
			return err
		}
		c.Files[name] = b
	}
	return nil
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

// faultHook, when set (by tests, through HORA_FAULT), is called between
// the phases of a checkpoint write with the step and the phase name.
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
	if err := os.RemoveAll(final); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := syncDir(root); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	return final, nil
}

// digest returns the size and SHA-256 of the file at path.
func digest(path string) (fileDigest, error) {
	f, err := os.Open(path)
	if err != nil {
		return fileDigest{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fileDigest{}, fmt.Errorf("%s: %w", path, err)
	}
	return fileDigest{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// writeFileSync writes data to path and syncs it to the disk.
func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
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

// writeFileAtomic writes data to a temporary file beside path, syncs it
// and renames it over path.
func writeFileAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := writeFileSync(tmp, data); err != nil {
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

// readManifest reads and checks the checkpoint in dir: the manifest must
// parse and every file it lists must have its recorded size (and, when
// verify is set, its SHA-256).
func readManifest(dir string, verify bool) (manifest, error) {
	var m manifest
	path := filepath.Join(dir, manifestFile)
	js, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(js, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	if m.Format != manifestFormat {
		return m, fmt.Errorf("%s: format %d, expected %d", path, m.Format, manifestFormat)
	}
	for f, want := range m.Files {
		p := filepath.Join(dir, f)
		if !verify {
			st, err := os.Stat(p)
			if err != nil {
				return m, err
			}
			if st.Size() != want.Size {
				return m, fmt.Errorf("%s: %d bytes, the manifest says %d", p, st.Size(), want.Size)
			}
			continue
		}
		got, err := digest(p)
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
// lists why, for the log.
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
// or a path to a checkpoint folder.
func findCheckpoint(runDir, which string) (savedCheckpoint, error) {
	switch which {
	case "", "last":
		c, ok, _, err := latestCheckpoint(runDir, false)
		if err != nil {
			return c, err
		}
		if !ok {
			return c, fmt.Errorf("%s: no complete checkpoint in %s", runDir, filepath.Join(runDir, checkpointsDir))
		}
		return c, nil
	case "best":
		b, err := readBest(runDir)
		if err != nil {
			return savedCheckpoint{}, err
		}
		if b.Checkpoint == "" {
			return savedCheckpoint{}, fmt.Errorf("%s: no best checkpoint yet (%s has none)", runDir, filepath.Join(runDir, checkpointsDir, bestFile))
		}
		which = b.Checkpoint
	}
	dir := which
	if !strings.ContainsRune(which, filepath.Separator) {
		// "step-99", "99" and "step-00000099" name the same checkpoint.
		if n, err := strconv.Atoi(strings.TrimPrefix(which, "step-")); err == nil && n >= 0 {
			which = checkpointName(n)
		}
		dir = filepath.Join(runDir, checkpointsDir, which)
		if _, err := os.Stat(dir); err != nil {
			all, _, _ := listCheckpoints(runDir)
			names := make([]string, len(all))
			for i, c := range all {
				names[i] = filepath.Base(c.Dir)
			}
			return savedCheckpoint{}, fmt.Errorf("%s: no checkpoint %s (found: %s; or last, best)", filepath.Join(runDir, checkpointsDir), which, strings.Join(names, ", "))
		}
	}
	m, err := readManifest(dir, true)
	if err != nil {
		return savedCheckpoint{}, fmt.Errorf("checkpoint %s: %w", which, err)
	}
	return savedCheckpoint{Dir: dir, Manifest: m}, nil
}

// bestRecord is the content of checkpoints/best.json.
type bestRecord struct {
	Checkpoint string  `json:"checkpoint"`
	Metric     string  `json:"metric"`
	Value      float64 `json:"value"`
	Step       int     `json:"step"`
}

func readBest(runDir string) (bestRecord, error) {
	var b bestRecord
	js, err := os.ReadFile(filepath.Join(runDir, checkpointsDir, bestFile))
	if errors.Is(err, os.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(js, &b); err != nil {
		return b, fmt.Errorf("%s: %w", filepath.Join(runDir, checkpointsDir, bestFile), err)
	}
	return b, nil
}

func writeBest(runDir string, b bestRecord) error {
	js, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(runDir, checkpointsDir, bestFile), append(js, '\n'))
}

// pruneCheckpoints removes the checkpoints of a run but the newest keep
// and the best, and the hidden folders of interrupted writes.
func pruneCheckpoints(runDir string, keep int) error {
	all, _, err := listCheckpoints(runDir)
	if err != nil {
		return err
	}
	best, err := readBest(runDir)
	if err != nil {
		return err
	}
	for i, c := range all {
		if i >= len(all)-keep || filepath.Base(c.Dir) == best.Checkpoint {
			continue
		}
		if err := os.RemoveAll(c.Dir); err != nil {
			return err
		}
	}
	return nil
}

// removeIncomplete deletes the hidden folders that interrupted checkpoint
// writes left behind, and returns their names.
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
		if strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp") {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				return removed, err
			}
			removed = append(removed, e.Name())
		}
	}
	return removed, nil
}

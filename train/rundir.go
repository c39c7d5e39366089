package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A run directory (output.dir) holds everything about one training run:
//
//	config.yaml     the configuration in effect (file, defaults, -set)
//	train.log       what rank 0 printed, across resumes
//	metrics.jsonl   one JSON object per line: "train" records every
//	                train.log_every_steps steps, "eval" records, and one
//	                "epoch" record per epoch
//	curves.png      loss and accuracy curves (output.plot)
//	checkpoints/    step-NNNNNNNN/ folders (see ckpt.go) and best.json
//	model.safetensors  the final weights (the EMA weights with train.ema)
//	vocab.json      a language model's characters
//	data.json       what the data looked like (classes, image transform)
//	.lock           locked while a train or resume process writes here

// The files at the top of a run folder, by name.
const (
	configFile  = "config.yaml"
	logFile     = "train.log"
	metricsFile = "metrics.jsonl"
	curvesFile  = "curves.png"
	vocabFile   = "vocab.json"
	lockFile    = ".lock"
)

// runFiles are the files a run folder holds at its top level: they are
// the run's, and an export never replaces one of them.
var runFiles = []string{configFile, logFile, metricsFile, curvesFile, vocabFile, lockFile, modelFile, dataFile}

// isRunFolder reports whether dir holds (the start of) a training run:
// its lock, its log or its checkpoints.
func isRunFolder(dir string) bool {
	for _, name := range []string{lockFile, logFile, checkpointsDir} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// checkNewRunDir checks the folder a new run is to write to: it may be
// missing, empty, or a run folder (the run's files replace the old run's,
// whose checkpoints freshRunDir has dealt with); a folder holding other
// files, such as the user's own config and data, is refused unless
// overwrite, so that the run's config.yaml, train.log and model do not
// replace them.
func checkNewRunDir(dir string, overwrite bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err != nil:
		return nil // missing (it is made), or not a folder: making it says why
	case len(entries) == 0 || overwrite || isRunFolder(dir):
		return nil
	}
	var names []string
	for _, e := range entries[:min(3, len(entries))] {
		names = append(names, e.Name())
	}
	more := ""
	if len(entries) > 3 {
		more = fmt.Sprintf(" and %d more", len(entries)-3)
	}
	return fmt.Errorf("output.dir: %s is not empty (%s%s) and holds no run: the run's files (%s, %s, %s, ...) would replace files of the same names there; choose an empty or new folder, or pass -overwrite",
		dir, strings.Join(names, ", "), more, configFile, logFile, modelFile)
}

// claimRunDir makes the run folder of j ready for this process, on rank
// 0 before anything is written there: it checks that a new run may write
// there (checkNewRunDir), creates it, takes its lock (lockRunDir) and
// only then, for a new run with j.overwrite, deletes the checkpoints of
// the run that was there. unlock releases the lock.
func claimRunDir(j *job) (unlock func(), err error) {
	dir := j.cfg.Output.Dir
	if !j.resume {
		if err := checkNewRunDir(dir, j.overwrite); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output.dir: cannot create %s: %w", dir, err)
	}
	if unlock, err = lockRunDir(dir); err != nil {
		return nil, err
	}
	if !j.resume && j.overwrite {
		if err := os.RemoveAll(filepath.Join(dir, checkpointsDir)); err != nil {
			unlock()
			return nil, fmt.Errorf("output.dir: -overwrite: %w", err)
		}
	}
	return unlock, nil
}

// protectedInputs are the files and folders the run reads, which a file
// it writes (export.onnx, -cpuprofile) must never replace: the config,
// the data (every file of data.dir) and the ONNX model it fine-tunes.
func protectedInputs(cfg *Config) []string {
	return slices.DeleteFunc(slices.Concat([]string{cfg.File(), cfg.Data.Dir, cfg.Data.File, cfg.Data.TrainFile, cfg.Data.ValFile, cfg.Model.File}, cfg.Data.Files),
		func(p string) bool { return p == "" })
}

// checkExportTarget checks, before anything is computed, that the file
// the run writes at path (an export, a profile) may be written: its
// folder exists (it is made if need be) and accepts new files, and path
// is no file that must not be replaced: something other than a regular
// file (a device, a FIFO, a symbolic link, a folder), a file of a run
// folder (config.yaml, a checkpoint's files), or one of protected (the
// config file being read, the data) or a file inside a protected folder.
func checkExportTarget(path string, protected ...string) error {
	if err := checkReplaceable(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	real := filepath.Join(realDir, filepath.Base(path))
	for _, p := range protected {
		rp, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if rp == real {
			return fmt.Errorf("refusing to replace %s: it is an input of the run (%s)", path, p)
		}
		if isInside(rp, real) { // rp is a folder: data.dir
			return fmt.Errorf("refusing to write %s: it lies in %s, an input of the run", path, p)
		}
	}
	if isRunFolder(realDir) && slices.Contains(runFiles, filepath.Base(real)) {
		return fmt.Errorf("refusing to replace %s: it is a file of the run in %s", path, dir)
	}
	for d := realDir; ; d = filepath.Dir(d) {
		if filepath.Base(d) == checkpointsDir && isRunFolder(filepath.Dir(d)) {
			return fmt.Errorf("refusing to write %s: it lies in the checkpoints of the run in %s, which only training writes", path, filepath.Dir(d))
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	f, err := os.CreateTemp(dir, ".hora-export-check*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// freeSpace returns the bytes available to this user on the file system
// of dir; tests replace it.
var freeSpace = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// prepareRunDir creates dir and checks, before any training, that files
// can be written in it and that its file system has room for need bytes.
func prepareRunDir(dir string, need int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output.dir: cannot create %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".hora-write-check-*")
	if err != nil {
		return fmt.Errorf("output.dir: cannot write in %s: %w", dir, err)
	}
	_, werr := probe.Write(make([]byte, 4096))
	serr := probe.Sync()
	probe.Close()
	os.Remove(probe.Name())
	if err := errors.Join(werr, serr); err != nil {
		return fmt.Errorf("output.dir: cannot write in %s: %w", dir, err)
	}
	free, err := freeSpace(dir)
	if err != nil {
		return fmt.Errorf("output.dir: %s: %w", dir, err)
	}
	if need > 0 && free < uint64(need) {
		return fmt.Errorf("output.dir: %s has %s free, but the run needs about %s for its checkpoints: free some space, lower checkpoint.keep, or choose another output.dir",
			dir, byteSize(int64(free)), byteSize(need))
	}
	return nil
}

// byteSize formats n bytes for a message.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// console prints what a run reports: text lines, or one JSON object per
// event (output.format json), to out; every text line also goes to
// train.log. Quiet drops the events that are not essential.
type console struct {
	mu    sync.Mutex
	out   io.Writer
	log   io.Writer // train.log, or nil
	json  bool
	quiet bool
}

// event reports one event: text is its line in text mode and in the log;
// fields are its JSON object in json mode (with "event" and "time"
// added). Non-essential events are dropped in quiet mode.
func (c *console) event(kind string, essential bool, text string, fields map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log != nil {
		fmt.Fprintf(c.log, "%s %s\n", time.Now().Format("2006-01-02 15:04:05"), text)
	}
	if c.quiet && !essential {
		return
	}
	if !c.json {
		fmt.Fprintln(c.out, text)
		return
	}
	obj := map[string]any{"event": kind, "time": time.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range fields {
		obj[k] = v
	}
	if len(fields) == 0 {
		obj["message"] = text
	}
	js, err := json.Marshal(obj)
	if err != nil {
		js, _ = json.Marshal(map[string]any{"event": kind, "message": text})
	}
	c.out.Write(append(js, '\n'))
}

// progress reports long work done before training (decoding images) at
// each tenth, and at its end.
func (c *console) progress(what string, done, total int) {
	if total < 1000 { // quick: not worth a line
		return
	}
	if done == total || done*10/total != (done-1)*10/total {
		c.info(false, "%s: %d/%d (%d%%)", what, done, total, done*100/total)
	}
}

// info reports a line of text (an "info" event).
func (c *console) info(essential bool, format string, args ...any) {
	c.event("info", essential, fmt.Sprintf(format, args...), nil)
}

// metricsLog appends records to metrics.jsonl.
type metricsLog struct {
	path string
	f    *os.File
}

// openMetrics opens metrics.jsonl of a run for appending. When resuming
// from step, the records a killed run wrote after that step are dropped
// first (they will be written again), and a last line cut short is
// removed.
func openMetrics(dir string, resumeStep int, resumeEpoch int) (*metricsLog, error) {
	path := filepath.Join(dir, metricsFile)
	if resumeStep >= 0 {
		if err := truncateMetrics(path, resumeStep, resumeEpoch); err != nil {
			return nil, err
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if resumeStep < 0 {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &metricsLog{path: path, f: f}, nil
}

// truncateMetrics keeps the records of metrics.jsonl up to step (epoch
// records: of the epochs before epoch).
func truncateMetrics(path string, step, epoch int) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Kind  string  `json:"kind"`
			Step  int     `json:"step"`
			Epoch float64 `json:"epoch"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue // a line cut short by a kill
		}
		if rec.Step > step || rec.Kind == "epoch" && int(rec.Epoch) >= epoch {
			continue
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	return writeFileAtomic(path, kept.Bytes())
}

// write appends one record and syncs it.
func (m *metricsLog) write(rec any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("%s: %w", m.path, err)
	}
	if _, err := m.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: %w", m.path, err)
	}
	return nil
}

// sync flushes the records to the disk.
func (m *metricsLog) sync() error {
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", m.path, err)
	}
	return nil
}

func (m *metricsLog) Close() error { return m.f.Close() }

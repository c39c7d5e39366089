package train

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/data"
	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/mpi"
	"github.com/hora-dl/hora/internal/strictyaml"
)

// A job's ranks may run on hosts that share no filesystem: only rank 0's
// host needs the config file and the run folder. Rank 0 reads them and
// sends what the others need (the config, the run folder's name, the
// checkpoint to resume from) over the communicator; the other ranks never
// read a run folder of their own, so a stale or missing copy on their
// host is never used. The data must be on every host: each rank reads its
// own, and checkSameData compares them.

// everyRank marks an error that every rank of the job met alike (a bad
// config that rank 0 read and shared): the ranks end on their own, with
// no MPI abort, and only rank 0 prints it.
type everyRank struct{ err error }

func (e everyRank) Error() string { return e.err.Error() }
func (e everyRank) Unwrap() error { return e.err }

// inWorld opens the job's communicator (mpi.InitWorld: one process, or
// the ranks a launcher started; train arranges the transport once the
// config is known), runs fn on it and closes it. When fn fails on one
// rank of several, the others must not wait for it: Abort prints the
// error with this rank's number and ends the job.
func inWorld(ctx context.Context, fn func(comm dist.Communicator) error) error {
	comm, err := mpi.InitWorld()
	if err != nil {
		return inputError{err}
	}
	err = fn(comm)
	var all everyRank
	if err != nil && comm.Size() > 1 && !errors.Is(err, context.Canceled) && !errors.Is(err, errDiverged) && !errors.As(err, &all) {
		comm.Abort(err)
	}
	if cerr := comm.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// fromRank0 returns rank 0's payload on every rank or, when rank 0 met
// rank0Err instead, an everyRank error on every rank (rank 0's own, or
// "rank 0: …" elsewhere). The message is one byte of status (0 payload,
// 1 error) and the payload or the error's text.
func fromRank0(ctx context.Context, comm dist.Communicator, payload []byte, rank0Err error) ([]byte, error) {
	var msg []byte
	if comm.Rank() == 0 {
		msg = append([]byte{0}, payload...)
		if rank0Err != nil {
			msg = append([]byte{1}, rank0Err.Error()...)
		}
	}
	msg, err := dist.BroadcastBytes(ctx, comm, msg, 0)
	switch {
	case err != nil:
		return nil, err
	case len(msg) > 0 && msg[0] == 0:
		return msg[1:], nil
	case comm.Rank() == 0:
		return nil, everyRank{rank0Err}
	}
	return nil, everyRank{fmt.Errorf("rank 0: %s", msg[min(len(msg), 1):])}
}

// shareFile returns the contents of the file at path as rank 0 read it,
// on every rank. When rank 0 cannot read it, every rank returns an
// error (everyRank) saying so.
func shareFile(ctx context.Context, comm dist.Communicator, path string) ([]byte, error) {
	var b []byte
	var err error
	if comm.Rank() == 0 {
		if b, err = strictyaml.ReadFile(path); err != nil { // a regular file of a config's size
			err = fmt.Errorf("reading config: %w", err)
		}
	}
	return fromRank0(ctx, comm, b, err)
}

// loadJobConfig reads the config file on rank 0 and parses it, with the
// -set overrides, on every rank. Errors are everyRank: each rank parses
// the same bytes.
func loadJobConfig(ctx context.Context, comm dist.Communicator, path string, sets []string) (*Config, error) {
	b, err := shareFile(ctx, comm, path)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(path, b, sets)
	if err != nil {
		return nil, everyRank{err}
	}
	return cfg, nil
}

// shareString returns rank 0's s, or rank 0's error, on every rank (as an
// everyRank error, exit status 2).
func shareString(ctx context.Context, comm dist.Communicator, s string, rank0Err error) (string, error) {
	b, err := fromRank0(ctx, comm, []byte(s), rank0Err)
	var all everyRank
	if errors.As(err, &all) {
		return "", everyRank{inputError{all.err}}
	}
	return string(b), err
}

// resumeMessage is what rank 0 tells the others about the checkpoint a
// run resumes from; the files follow it, one message each.
type resumeMessage struct {
	OK       bool     `json:"ok"`
	Dir      string   `json:"dir"`
	Manifest manifest `json:"manifest"`
	Files    []string `json:"files"`
}

// shareResumePoint sends the checkpoint rank 0 found (or that it found
// none, or its error) to every rank, with the bytes of its files, which
// every rank checks against the manifest's digests.
func shareResumePoint(ctx context.Context, comm dist.Communicator, from savedCheckpoint, ok bool, rank0Err error) (savedCheckpoint, bool, error) {
	msg := resumeMessage{OK: ok, Dir: from.Dir, Manifest: from.Manifest}
	for name := range from.Files {
		msg.Files = append(msg.Files, name)
	}
	js, _ := json.Marshal(msg)
	js, err := fromRank0(ctx, comm, js, rank0Err)
	if err != nil {
		return from, false, err
	}
	if comm.Rank() != 0 {
		msg = resumeMessage{}
		if err := json.Unmarshal(js, &msg); err != nil {
			return from, false, fmt.Errorf("the resume point from rank 0: %w", err)
		}
		from = savedCheckpoint{Dir: msg.Dir, Manifest: msg.Manifest, Files: map[string][]byte{}}
	}
	for _, name := range msg.Files {
		b, err := dist.BroadcastBytes(ctx, comm, from.Files[name], 0)
		if err != nil {
			return from, false, err
		}
		if comm.Rank() != 0 {
			if err := checkFileBytes(filepath.Join(from.Dir, name)+" (from rank 0)", b, msg.Manifest.Files[name]); err != nil {
				return from, false, err
			}
			from.Files[name] = b
		}
	}
	return from, msg.OK, nil
}

// dataFingerprint describes a rank's data sets for checkSameData: their
// sizes and a digest of their shapes and of up to fingerprintSamples
// samples of each, spread over the set.
type dataFingerprint struct {
	Host   string `json:"host"`
	Train  int    `json:"train"`
	Test   int    `json:"test"`
	Digest string `json:"digest"`
}

// fingerprintSamples is how many samples of each set the digest reads:
// enough to tell different files apart, few enough for an image folder
// to decode at start.
const fingerprintSamples = 64

// fingerprint returns the fingerprint of a job's data on this host.
func fingerprint(train, test data.Dataset) dataFingerprint {
	h := sha256.New()
	for _, d := range []data.Dataset{train, test} {
		n := d.Len()
		shape := d.SampleShape()
		binary.Write(h, binary.LittleEndian, int64(n))
		for _, s := range shape {
			binary.Write(h, binary.LittleEndian, int64(s))
		}
		if n == 0 {
			continue
		}
		size := 1
		for _, s := range shape {
			size *= s
		}
		x := make([]float32, size)
		word := make([]byte, 4)
		for k := range min(n, fingerprintSamples) {
			i := int(int64(k) * int64(n) / int64(min(n, fingerprintSamples)))
			label := d.Sample(i, x)
			binary.Write(h, binary.LittleEndian, label)
			for _, v := range x {
				binary.LittleEndian.PutUint32(word, math.Float32bits(v))
				h.Write(word)
			}
		}
	}
	host, _ := os.Hostname()
	return dataFingerprint{Host: host, Train: train.Len(), Test: test.Len(), Digest: hex.EncodeToString(h.Sum(nil))[:16]}
}

// checkSameData compares every rank's data with rank 0's: a rank whose
// host holds other data (another version of the files, a truncated copy)
// would train on it silently. The error names the ranks and hosts that
// differ, with what each holds.
func checkSameData(ctx context.Context, comm dist.Communicator, dataDir string, mine dataFingerprint) error {
	if comm.Size() == 1 {
		return nil
	}
	js, _ := json.Marshal(mine)
	all, err := dist.AllgatherBytes(ctx, comm, js)
	if err != nil {
		return err
	}
	fps := make([]dataFingerprint, len(all))
	for r, b := range all {
		if err := json.Unmarshal(b, &fps[r]); err != nil {
			return fmt.Errorf("the data fingerprint of rank %d: %w", r, err)
		}
	}
	ref := fps[0]
	var diffs []string
	for r, fp := range fps[1:] {
		if fp.Train != ref.Train || fp.Test != ref.Test || fp.Digest != ref.Digest {
			diffs = append(diffs, fmt.Sprintf("rank %d on host %s has %d training and %d test samples, digest %s",
				r+1, fp.Host, fp.Train, fp.Test, fp.Digest))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	// Every rank sees the same list, so every rank fails alike.
	return everyRank{inputError{fmt.Errorf("the data (%s) differs between hosts: rank 0 on host %s has %d training and %d test samples, digest %s; %s: give every host the same data",
		dataDir, ref.Host, ref.Train, ref.Test, ref.Digest, strings.Join(diffs, "; "))}}
}

// dataSource names where a job's data comes from, for messages: its
// folder, files or registered name.
func dataSource(cfg *Config) string {
	switch {
	case cfg.Data.Name == "text":
		return "data.files " + strings.Join(cfg.Data.Files, ", ")
	case cfg.Data.Name == "csv":
		return "data " + strings.Join(slices.DeleteFunc([]string{cfg.Data.File, cfg.Data.TrainFile, cfg.Data.ValFile}, func(s string) bool { return s == "" }), ", ")
	case cfg.dataGiven:
		return "the data given to Fit"
	}
	if _, ok := datasetRegistry.lookup(cfg.Data.Name); ok {
		return "data set " + cfg.Data.Name
	}
	return "data.dir " + cfg.Data.Dir
}

// weightsDigest returns a SHA-256 of the model's parameters, in order,
// as their float64 values: the same on every rank of a data-parallel run,
// whose ranks apply the same averaged gradients to the same weights.
func weightsDigest(params []*autograd.Param) string {
	h := sha256.New()
	word := make([]byte, 8)
	for _, p := range params {
		h.Write([]byte(p.Name))
		for _, v := range p.Value.Values() {
			binary.LittleEndian.PutUint64(word, math.Float64bits(v))
			h.Write(word)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// checkInSync compares every rank's weights with rank 0's at the end of a
// data-parallel run. Ranks that drifted apart (one resumed from another
// checkpoint than rank 0, say) would have trained different models while
// rank 0 wrote its own: the error names them. On success rank 0 returns
// the digest, for the log.
func checkInSync(ctx context.Context, comm dist.Communicator, params []*autograd.Param) (string, error) {
	mine := weightsDigest(params)
	all, err := dist.AllgatherBytes(ctx, comm, []byte(mine))
	if err != nil {
		return "", err
	}
	var differ []string
	for r, d := range all[1:] {
		if string(d) != string(all[0]) {
			differ = append(differ, fmt.Sprintf("rank %d has %s", r+1, d))
		}
	}
	if len(differ) > 0 {
		return "", everyRank{fmt.Errorf("the ranks' weights differ at the end of training: rank 0 has %s, %s", all[0], strings.Join(differ, ", "))}
	}
	return mine, nil
}

package redteam

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/tensor"
)

// How a message says that a path leaves the run or checkpoint folder.
const (
	otherRunRE = `(?i)outside|another run|(of|in) (this|the) run|invalid|not (a|the) (checkpoint )?name`
	escapeRE   = `(?i)outside|escape|invalid|not allowed|unsafe|not (a|the) (name of a )?file|separator`
)

// resumeArgs resumes run for one more epoch.
func resumeArgs(run string) []string {
	return []string{"train", "resume", "-run", run, "-set", "train.epochs=2"}
}

// evalLast evaluates the newest checkpoint of run.
func evalLast(run string) []string {
	return []string{"train", "eval", "-run", run, "-checkpoint", "last"}
}

// hasCheckpoint checks that a run holds the checkpoint name.
func hasCheckpoint(run, name string) error {
	if _, err := os.Stat(filepath.Join(ckpt(run, name), "manifest.json")); err != nil {
		return fmt.Errorf("no checkpoint %s after the command: %w", name, err)
	}
	return nil
}

// manifestEntry adds to the manifest of a checkpoint an entry for the
// file at target, named by its path relative to the checkpoint folder
// ("../../…/etc/passwd"), with the given size and digest.
func (e *env) manifestEntry(ckptDir, target string, size int64, sum string) string {
	e.t.Helper()
	rel, err := filepath.Rel(ckptDir, target)
	e.must(err)
	e.editJSON(filepath.Join(ckptDir, "manifest.json"), func(m map[string]any) {
		manifestFiles(e, m)[rel] = map[string]any{"size": size, "sha256": sum}
	})
	return rel
}

// fileDigest returns the size and SHA-256 of a file outside the case's
// folder (read only), or 0 and the digest of nothing when it cannot be
// read.
func fileDigest(path string) (int64, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		b = nil
	}
	sum := sha256.Sum256(b)
	return int64(len(b)), hex.EncodeToString(sum[:])
}

// editManifest changes one key of a checkpoint's manifest.
func (e *env) editManifest(ckptDir, key string, value any) {
	e.t.Helper()
	e.editJSON(filepath.Join(ckptDir, "manifest.json"), func(m map[string]any) { m[key] = value })
}

// editManifests changes one key of the manifests of both checkpoints of
// the shared run: forging only the newest would let resume fall back,
// rightly, to the older one.
func (e *env) editManifests(run, key string, value any) {
	e.t.Helper()
	for _, c := range []string{firstCkpt, lastCkpt} {
		e.editManifest(ckpt(run, c), key, value)
	}
}

// checkpointCases are damaged, forged or hostile run folders:
// checkpoints, manifests, best.json. A resume that wrongly accepts a
// forged manifest goes on training, which changes the run folder as any
// resume does: those cases protect nothing, so that they end "silent",
// the defect they show, rather than "data loss".
func checkpointCases() []tcase {
	cases := []tcase{
		{
			// No checkpoint passes verification (a byte of the newest's
			// model changed, a file of the older one missing): resume
			// must refuse with the reasons, not start over, and change
			// nothing in the run folder.
			name: "resume_no_verified_checkpoint",
			setup: func(e *env) []string {
				run := e.run("run")
				e.flipByte(ckpt(run, lastCkpt) + "/model.safetensors")
				e.must(os.Remove(ckpt(run, firstCkpt) + "/optimizer.safetensors"))
				return resumeArgs(run)
			},
			msg:  []string{`(?i)verif|checkpoint`, `model\.safetensors`, `optimizer\.safetensors`},
			keep: []string{"run"},
		},
		{
			// Resume with another architecture than the checkpoint's:
			// an error naming the mismatch, checkpoints untouched.
			name: "resume_changed_architecture",
			setup: func(e *env) []string {
				run := e.run("run")
				return append(resumeArgs(run), "-set", "model.hidden=[16]")
			},
			msg:  []string{`(?i)model\.hidden|shape|size`},
			keep: []string{"run/checkpoints"},
		},
		{
			// A checkpoint killed mid-way through its deletion by the
			// pruning (its manifest and model gone, its optimizer left):
			// resume must skip it and continue from the newest complete
			// one.
			name: "resume_half_deleted_old_checkpoint",
			setup: func(e *env) []string {
				run := e.run("run")
				e.must(os.Remove(ckpt(run, firstCkpt) + "/manifest.json"))
				e.must(os.Remove(ckpt(run, firstCkpt) + "/model.safetensors"))
				return resumeArgs(run)
			},
			ok: func(e *env, r *result) error { return hasCheckpoint(e.path("run"), "step-00000008") },
		},
		{
			// The newest checkpoint half deleted (a kill while -overwrite
			// or a pruning removed it: its model file gone, its manifest
			// left): resume must fall back to the older one.
			name: "resume_half_deleted_newest_checkpoint",
			setup: func(e *env) []string {
				run := e.run("run")
				e.must(os.Remove(ckpt(run, lastCkpt) + "/model.safetensors"))
				return resumeArgs(run)
			},
			ok: func(e *env, r *result) error { return hasCheckpoint(e.path("run"), "step-00000008") },
		},
		{
			// Only the newest manifest forged (epoch 0): resume falls
			// back to the older checkpoint, and says which one it skipped
			// and why.
			name: "resume_forged_newest_falls_back",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifest(ckpt(run, lastCkpt), "epoch", 0)
				return resumeArgs(run)
			},
			ok: func(e *env, r *result) error {
				if err := hasCheckpoint(e.path("run"), "step-00000008"); err != nil {
					return err
				}
				out := r.stdout + r.stderr + readAllFile(e.path("run/train.log"))
				if !regexp.MustCompile(`(?i)skip[^\n]*` + lastCkpt + `[^\n]*epoch`).MatchString(out) {
					return fmt.Errorf("the output does not say that %s was skipped for its epoch", lastCkpt)
				}
				return nil
			},
		},
		{
			// A manifest with epoch 0 (positions count from 1): resume
			// must say so at once, not panic mid-epoch.
			name: "manifest_epoch_zero",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifests(run, "epoch", 0)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `epoch`},
		},
		{
			// A manifest with epoch -1.
			name: "manifest_epoch_negative",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifests(run, "epoch", -1)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `epoch`},
		},
		{
			// A manifest with a negative position in the epoch.
			name: "manifest_epoch_offset_negative",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifests(run, "epoch", 1)
				e.editManifests(run, "epoch_offset", -16)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `epoch_offset`},
		},
		{
			// A manifest with a position past the end of the epoch.
			name: "manifest_epoch_offset_past_end",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifests(run, "epoch", 1)
				e.editManifests(run, "epoch_offset", 1000000)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `epoch_offset`},
		},
		{
			// A manifest written by 0 ranks of batch 0: resharding
			// divides by them.
			name: "manifest_world_size_zero",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifests(run, "world_size", 0)
				e.editManifests(run, "batch_size", 0)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `world_size|batch_size`},
		},
		{
			// A manifest of another format version.
			name: "manifest_format_2",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editManifest(ckpt(run, lastCkpt), "format", 2)
				return []string{"train", "eval", "-run", run, "-checkpoint", lastCkpt}
			},
			msg: []string{`manifest\.json`, `format`},
		},
		{
			// A manifest that is not JSON, asked for by name.
			name: "manifest_corrupt_json",
			setup: func(e *env) []string {
				run := e.run("run")
				e.writeString("run/checkpoints/"+lastCkpt+"/manifest.json", "{\"format\": 1, \"files\": {")
				return []string{"train", "eval", "-run", run, "-checkpoint", lastCkpt}
			},
			msg: []string{`manifest\.json`},
		},
		{
			// A manifest that does not list the model's file: resume must
			// not restore unverified (or no) weights.
			name: "manifest_without_model_resume",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editJSON(ckpt(run, lastCkpt)+"/manifest.json", func(m map[string]any) {
					delete(manifestFiles(e, m), "model.safetensors")
				})
				e.editJSON(ckpt(run, firstCkpt)+"/manifest.json", func(m map[string]any) {
					delete(manifestFiles(e, m), "model.safetensors")
				})
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `model\.safetensors`},
		},
		{
			// The same for eval: the weights it would read are not
			// verified by any digest.
			name: "manifest_without_model_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editJSON(ckpt(run, lastCkpt)+"/manifest.json", func(m map[string]any) {
					delete(manifestFiles(e, m), "model.safetensors")
				})
				return []string{"train", "eval", "-run", run, "-checkpoint", lastCkpt}
			},
			msg: []string{`manifest\.json`, `model\.safetensors`},
		},
		{
			// A manifest entry that leaves the checkpoint folder
			// (../../…/etc/passwd) with the file's true digest: eval must
			// refuse it, not read it.
			name: "manifest_entry_etc_passwd_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				size, sum := fileDigest("/etc/passwd")
				e.manifestEntry(ckpt(run, lastCkpt), "/etc/passwd", size, sum)
				return []string{"train", "eval", "-run", run, "-checkpoint", lastCkpt}
			},
			msg: []string{`manifest\.json`, `etc/passwd`, escapeRE},
		},
		{
			// The same entry read by resume.
			name: "manifest_entry_etc_passwd_resume",
			setup: func(e *env) []string {
				run := e.run("run")
				size, sum := fileDigest("/etc/passwd")
				e.manifestEntry(ckpt(run, lastCkpt), "/etc/passwd", size, sum)
				e.manifestEntry(ckpt(run, firstCkpt), "/etc/passwd", size, sum)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `etc/passwd`, escapeRE},
		},
		{
			// A manifest entry naming ../../…/dev/zero (size 0): hashing
			// it never ends. eval must refuse it at once.
			name: "manifest_entry_dev_zero_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				_, empty := fileDigest("")
				e.manifestEntry(ckpt(run, lastCkpt), "/dev/zero", 0, empty)
				return []string{"train", "eval", "-run", run, "-checkpoint", lastCkpt}
			},
			msg: []string{`manifest\.json`, `dev/zero`},
		},
		{
			// The same entry read by resume (which reads the files into
			// memory).
			name: "manifest_entry_dev_zero_resume",
			setup: func(e *env) []string {
				run := e.run("run")
				_, empty := fileDigest("")
				e.manifestEntry(ckpt(run, lastCkpt), "/dev/zero", 0, empty)
				e.manifestEntry(ckpt(run, firstCkpt), "/dev/zero", 0, empty)
				return resumeArgs(run)
			},
			msg: []string{`manifest\.json`, `dev/zero`},
		},
		{
			// best.json naming another run's checkpoint by its absolute
			// path: eval must not evaluate a checkpoint outside the run.
			name: "best_json_other_run_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				other := e.run("other")
				e.editJSON(run+"/checkpoints/best.json", func(m map[string]any) { m["checkpoint"] = ckpt(other, lastCkpt) })
				return []string{"train", "eval", "-run", run}
			},
			msg: []string{`best\.json`, otherRunRE},
		},
		{
			// best.json naming another run's checkpoint by a relative
			// path, for export.
			name: "best_json_other_run_export",
			setup: func(e *env) []string {
				run := e.run("run")
				e.run("other")
				e.editJSON(run+"/checkpoints/best.json", func(m map[string]any) { m["checkpoint"] = "other/checkpoints/" + lastCkpt })
				return []string{"train", "export", "-run", run, "-o", e.path("out.onnx")}
			},
			msg: []string{`best\.json`, otherRunRE},
		},
		{
			// best.json that is not JSON: eval names it.
			name: "best_json_corrupt_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				e.writeString("run/checkpoints/best.json", "{not json")
				return []string{"train", "eval", "-run", run}
			},
			msg: []string{`best\.json`},
		},
		{
			// best.json that is not JSON, on resume: continuing (and
			// rewriting it) or a clear error naming it are both fine; a
			// failure after training is not.
			name: "best_json_corrupt_resume",
			setup: func(e *env) []string {
				run := e.run("run")
				e.writeString("run/checkpoints/best.json", "{not json")
				return resumeArgs(run)
			},
			msg: []string{`best\.json`},
			ok:  func(e *env, r *result) error { return hasCheckpoint(e.path("run"), "step-00000008") },
		},
		{
			// best.json naming a checkpoint that does not exist: the
			// message must say that best.json is what names it.
			name: "best_json_missing_checkpoint",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editJSON(run+"/checkpoints/best.json", func(m map[string]any) { m["checkpoint"] = "step-00000099" })
				return []string{"train", "eval", "-run", run}
			},
			msg: []string{`best\.json`, `step-0*99`},
		},
		{
			// A model file cut short (its digest updated so that only the
			// content is wrong): eval names the file and the problem.
			name: "safetensors_truncated",
			setup: func(e *env) []string {
				run := e.run("run")
				p := ckpt(run, lastCkpt) + "/model.safetensors"
				b, err := os.ReadFile(p)
				e.must(err)
				e.must(os.WriteFile(p, b[:len(b)*2/3], 0o644))
				e.redigest(ckpt(run, lastCkpt), "model.safetensors")
				return evalLast(run)
			},
			msg: []string{`model\.safetensors`, `(?i)truncat|short|ends|size|bytes`},
		},
		{
			// A model file whose header length says 2^62 bytes.
			name: "safetensors_header_length_bomb",
			setup: func(e *env) []string {
				run := e.run("run")
				p := ckpt(run, lastCkpt) + "/model.safetensors"
				b, err := os.ReadFile(p)
				e.must(err)
				binary.LittleEndian.PutUint64(b, 1<<62)
				e.must(os.WriteFile(p, b, 0o644))
				e.redigest(ckpt(run, lastCkpt), "model.safetensors")
				return evalLast(run)
			},
			msg: []string{`model\.safetensors`, `(?i)header`},
		},
		{
			// A model file whose header gives a tensor the shape
			// [2^32, 2^32] for its few bytes.
			name: "safetensors_huge_shape",
			setup: func(e *env) []string {
				run := e.run("run")
				p := ckpt(run, lastCkpt) + "/model.safetensors"
				rewriteSafetensorsHeader(e, p, func(h map[string]map[string]any) {
					for name, info := range h {
						if name != "__metadata__" {
							info["shape"] = []int64{1 << 32, 1 << 32}
							return
						}
					}
				})
				e.redigest(ckpt(run, lastCkpt), "model.safetensors")
				return evalLast(run)
			},
			msg: []string{`model\.safetensors`, `(?i)shape|size|bytes`},
		},
		{
			// A model file with a tensor the model does not have: loading
			// it must not ignore it silently.
			name: "safetensors_extra_tensor",
			setup: func(e *env) []string {
				run := e.run("run")
				p := ckpt(run, lastCkpt) + "/model.safetensors"
				ts, meta, err := checkpoint.Load(p)
				e.must(err)
				ts["bogus.weight"] = tensor.FromFloat32([]float32{1, 2, 3}, 3)
				e.must(checkpoint.Save(p, ts, meta))
				e.redigest(ckpt(run, lastCkpt), "model.safetensors")
				return evalLast(run)
			},
			msg: []string{`model\.safetensors`, `bogus\.weight`},
		},
		{
			// NaN weights, then eval. Either a clear error naming the
			// checkpoint and the NaNs, or valid JSON whose test_loss is
			// null or "NaN" (the loss of those weights); never "json:
			// unsupported value: NaN".
			name: "nan_weights_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				e.safetensorsF32(ckpt(run, lastCkpt)+"/model.safetensors", fillNaN)
				e.redigest(ckpt(run, lastCkpt), "model.safetensors")
				return evalLast(run)
			},
			msg: []string{`(?i)\bnan\b`, `model\.safetensors|step-0+4`},
			ok: func(e *env, r *result) error {
				var out map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
					return fmt.Errorf("stdout is not one JSON object: %v: %q", err, r.stdout)
				}
				loss, ok := out["test_loss"]
				if !ok {
					return fmt.Errorf("no test_loss in %s", r.stdout)
				}
				if loss != nil && loss != "NaN" {
					return fmt.Errorf("test_loss is %v for NaN weights; want null or \"NaN\"", loss)
				}
				return nil
			},
		},
		{
			// A run folder without its config.yaml.
			name: "run_without_config_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				e.must(os.Remove(run + "/config.yaml"))
				return []string{"train", "eval", "-run", run}
			},
			msg: []string{`config\.yaml`, `(?i)no such file|missing|not a run|does not exist`},
		},
		{
			// A run folder whose data.json is garbage.
			name: "data_json_corrupt_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				e.write("run/data.json", garbage(300, 5))
				return []string{"train", "export", "-run", run, "-o", e.path("out.onnx")}
			},
			msg: []string{`data\.json`},
		},
		{
			// data.json (which predict and export build the model from)
			// forged to say the samples are 1000000×1000000 images.
			name: "data_json_huge_sample_shape",
			setup: func(e *env) []string {
				run := e.run("run")
				e.editJSON(run+"/data.json", func(m map[string]any) {
					m["sample_shape"] = []int{1, 1000000, 1000000}
					if im, ok := m["image"].(map[string]any); ok {
						im["height"], im["width"] = 1000000, 1000000
					}
				})
				return []string{"train", "predict", "-run", run, e.write("ok.png", smallPNG())}
			},
			msg: []string{`data\.json`, `(?i)sample_shape|shape|size|height|width|too (large|big)`},
		},
		{
			// A checkpoint whose model file is a named pipe: eval must
			// not wait on it for ever. (Added: not in the issue.)
			name: "checkpoint_file_fifo_eval",
			setup: func(e *env) []string {
				run := e.run("run")
				p := ckpt(run, lastCkpt) + "/model.safetensors"
				e.must(os.Remove(p))
				e.fifo("run/checkpoints/" + lastCkpt + "/model.safetensors")
				return []string{"train", "eval", "-run", run, "-checkpoint", lastCkpt}
			},
			msg: []string{`model\.safetensors`, notRegularRE + `|size`},
		},
		{
			// -checkpoint naming a checkpoint the run does not have.
			name: "eval_unknown_checkpoint",
			setup: func(e *env) []string {
				return []string{"train", "eval", "-run", e.run("run"), "-checkpoint", "step-99"}
			},
			msg: []string{`step-0*99`},
		},
		{
			// -run naming no folder.
			name: "eval_missing_run",
			setup: func(e *env) []string {
				return []string{"train", "eval", "-run", e.path("nope")}
			},
			msg: []string{`nope`, `(?i)no such file|does not exist|not a run|missing`},
		},
		{
			// eval when the data folder is gone.
			name: "eval_missing_data_dir",
			setup: func(e *env) []string {
				return []string{"train", "eval", "-run", e.run("run"), "-set", "data.dir=" + e.path("gone")}
			},
			msg: []string{`gone`, `(?i)no such file|does not exist|missing`},
		},
		{
			// The baseline: eval of an intact run works.
			name: "eval_ok",
			setup: func(e *env) []string {
				return []string{"train", "eval", "-run", e.run("run")}
			},
			ok: func(e *env, r *result) error {
				var out map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
					return fmt.Errorf("stdout is not one JSON object: %v: %q", err, r.stdout)
				}
				if _, ok := out["test_loss"].(float64); !ok {
					return fmt.Errorf("no numeric test_loss in %s", r.stdout)
				}
				return nil
			},
		},
	}
	return cases
}

// rewriteSafetensorsHeader edits the JSON header of a safetensors file.
func rewriteSafetensorsHeader(e *env, path string, edit func(h map[string]map[string]any)) {
	e.t.Helper()
	b, err := os.ReadFile(path)
	e.must(err)
	n := binary.LittleEndian.Uint64(b)
	var h map[string]map[string]any
	e.must(json.Unmarshal(b[8:8+n], &h))
	edit(h)
	js, err := json.Marshal(h)
	e.must(err)
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	out = append(out, js...)
	out = append(out, b[8+n:]...)
	e.must(os.WriteFile(path, out, 0o644))
}

package redteam

import (
	"fmt"
	"os"
	"strings"
)

// sizeProblemRE is how a message says that a value asks for too much.
const sizeProblemRE = `(?i)memory|too (large|big|many)|at most|exceeds|limit|[kMGTP]i?B\b|bytes|parameters`

// trainSet runs the tiny config with -set overrides.
func trainSet(e *env, sets ...string) []string {
	cfg := e.tinyConfig("c.yaml", "")
	args := []string{"train", "-config", cfg, "-out", e.path("run")}
	for _, s := range sets {
		args = append(args, "-set", s)
	}
	return args
}

// trained checks that a run folder holds its final model.
func trained(e *env, _ *result) error {
	if _, err := os.Stat(e.path("run/model.safetensors")); err != nil {
		return fmt.Errorf("no final model: %w", err)
	}
	return nil
}

// configCases are hostile or careless configs and flags.
func configCases() []tcase {
	return []tcase{
		{
			// An empty config: model.name is required.
			name:  "config_empty",
			setup: func(e *env) []string { return []string{"train", "-config", e.writeString("empty.yaml", "")} },
			msg:   []string{`empty\.yaml`, `(?i)empty|model\.name`},
		},
		{
			// 4 KB of random bytes as the config.
			name:  "config_binary_garbage",
			setup: func(e *env) []string { return []string{"train", "-config", e.write("garbage.yaml", garbage(4096, 1))} },
			msg:   []string{`garbage\.yaml`},
		},
		{
			// The config path names a folder.
			name:  "config_is_directory",
			setup: func(e *env) []string { return []string{"train", "-config", e.mkdir("conf.yaml")} },
			msg:   []string{`conf\.yaml`, `(?i)is a directory`},
		},
		{
			// The config is a named pipe nobody writes: reading it would
			// wait forever. It must be refused at once.
			name:  "config_fifo",
			setup: func(e *env) []string { return []string{"train", "-config", e.fifo("pipe.yaml")} },
			msg:   []string{`pipe\.yaml`, notRegularRE},
		},
		{
			// The config does not exist.
			name:  "config_missing",
			setup: func(e *env) []string { return []string{"train", "-config", e.path("missing.yaml")} },
			msg:   []string{`missing\.yaml`, `(?i)no such file|does not exist|not found`},
		},
		{
			// The config is a link to /dev/zero (read only): reading it to
			// its end never ends and fills the memory.
			name: "config_dev_zero",
			setup: func(e *env) []string {
				return []string{"train", "-config", e.symlink("/dev/zero", "zero.yaml")}
			},
			msg: []string{`zero\.yaml`, `(?i)not a regular file|device|too (large|big)`},
		},
		{
			// A YAML nesting bomb: 100000 nested flow sequences (200 KB).
			name: "yaml_nesting_bomb",
			setup: func(e *env) []string {
				return []string{"train", "-config", e.writeString("nest.yaml", nestingBomb("model", 100000))}
			},
			msg: []string{`nest\.yaml`, `(?i)nest|deep|depth`},
		},
		{
			// A billion-laughs alias bomb (about 600 KB) under
			// model.args, which holds free-form YAML.
			name: "yaml_alias_bomb_args",
			setup: func(e *env) []string {
				bomb := aliasBomb("x", 100000, 6)
				var b strings.Builder
				b.WriteString("model:\n  name: mlp\n  args:\n")
				for _, line := range strings.Split(strings.TrimSpace(bomb), "\n") {
					b.WriteString("    " + line + "\n")
				}
				return []string{"train", "-config", e.writeString("laughs.yaml", b.String())}
			},
			msg: []string{`laughs\.yaml`, `(?i)alias|anchor|expan|too (large|many|big)|model\.args`},
		},
		{
			// The same bomb at the top level, under keys the config does
			// not know.
			name: "yaml_alias_bomb_top",
			setup: func(e *env) []string {
				return []string{"train", "-config", e.writeString("laughs.yaml", aliasBomb("x", 100000, 6))}
			},
			msg: []string{`laughs\.yaml`, `(?i)alias|anchor|expan|too (large|many|big)|unknown|a0`},
		},
		{
			// model.hidden [1000000000]: 64 billion weights.
			name:  "mlp_hidden_huge",
			setup: func(e *env) []string { return trainSet(e, "model.hidden=[1000000000]") },
			msg:   []string{`model\.hidden`, sizeProblemRE},
		},
		{
			// model.classes 1000000000: 8 billion weights in the last
			// layer.
			name:  "classes_huge",
			setup: func(e *env) []string { return trainSet(e, "model.classes=1000000000") },
			msg:   []string{`model\.classes`},
		},
		{
			// train.prefetch 1e9 batches prepared ahead.
			name:  "prefetch_huge",
			setup: func(e *env) []string { return trainSet(e, "train.prefetch=1000000000") },
			msg:   []string{`train\.prefetch`},
		},
		{
			// train.threads 1e9.
			name:  "threads_huge",
			setup: func(e *env) []string { return trainSet(e, "train.threads=1000000000") },
			msg:   []string{`train\.threads`},
		},
		{
			// train.batch_size 1e9, for 64 samples: one batch of all of
			// them, or a clear error; not a buffer for 1e9 samples.
			name:  "batch_size_huge",
			setup: func(e *env) []string { return trainSet(e, "train.batch_size=1000000000") },
			msg:   []string{`train\.batch_size`},
			ok:    trained,
		},
		{
			// train.eval_batch_size 1e9, likewise.
			name:  "eval_batch_size_huge",
			setup: func(e *env) []string { return trainSet(e, "train.eval_batch_size=1000000000") },
			msg:   []string{`train\.eval_batch_size`},
			ok:    trained,
		},
		{
			// data.augment_pad 1000000: images of 2000008×2000008.
			name:  "augment_pad_huge",
			setup: func(e *env) []string { return trainSet(e, "data.augment_pad=1000000") },
			msg:   []string{`data\.augment_pad`},
		},
		{
			// dist.fusion_threshold 1e15 bytes in a single process: it is
			// ignored, or refused; nothing that size is allocated.
			name:  "fusion_threshold_huge",
			setup: func(e *env) []string { return trainSet(e, "dist.fusion_threshold=1000000000000000") },
			msg:   []string{`dist\.fusion_threshold`},
			ok:    trained,
		},
		{
			// checkpoint.keep 1e9: the disk-space estimate must not
			// overflow into nonsense.
			name:  "checkpoint_keep_huge",
			setup: func(e *env) []string { return trainSet(e, "checkpoint.keep=1000000000") },
			msg:   []string{`checkpoint\.keep`},
			ok:    trained,
		},
		{
			// A transformer with model.dim 1e9.
			name: "transformer_dim_huge",
			setup: func(e *env) []string {
				return trainSet(e, "model.name=transformer", "model.dim=1000000000", "model.heads=1", "model.patch_size=0")
			},
			msg: []string{`model\.dim`},
		},
		{
			// A transformer whose patch size (7) does not divide the 8×8
			// images.
			name:  "transformer_patch_not_dividing",
			setup: func(e *env) []string { return trainSet(e, "model.name=transformer", "model.dim=8", "model.heads=2") },
			msg:   []string{`model\.patch_size`},
		},
		{
			// LeNet-5 (made for 28×28) on 8×8 images.
			name:  "lenet5_tiny_images",
			setup: func(e *env) []string { return trainSet(e, "model.name=lenet5") },
			msg:   []string{`(?i)lenet5|model\.name`, `(?i)too small|at least|8×8|8x8|\[1 8 8\]|image`},
		},
		{
			// A language model asked to sample 1e12 characters after each
			// evaluation.
			name: "sample_length_huge",
			setup: func(e *env) []string {
				cfg := e.lmConfig("lm.yaml", "")
				return []string{"train", "-config", cfg, "-out", e.path("run"), "-set", "sample.length=1000000000000"}
			},
			msg: []string{`sample\.length`},
		},
		{
			// -np -3: a negative rank count must not mean "no mpirun".
			name:  "train_np_negative",
			setup: func(e *env) []string { return append(trainSet(e), "-np", "-3") },
			msg:   []string{`-np`},
		},
		{
			// -restarts -1.
			name:  "train_restarts_negative",
			setup: func(e *env) []string { return append(trainSet(e), "-restarts", "-1") },
			msg:   []string{`-restarts`},
		},
		{
			// A misspelt key in -set.
			name:  "set_unknown_key",
			setup: func(e *env) []string { return trainSet(e, "train.epoch=3") },
			msg:   []string{`train\.epoch`},
		},
		{
			// A value of the wrong type in -set.
			name:  "set_bad_value",
			setup: func(e *env) []string { return trainSet(e, "train.epochs=many") },
			msg:   []string{`train\.epochs`},
		},
		{
			// A learning rate of NaN.
			name:  "lr_nan",
			setup: func(e *env) []string { return trainSet(e, "optimizer.lr=.nan") },
			msg:   []string{`optimizer\.lr`},
		},
		{
			// An empty output.dir (and no -out).
			name: "output_dir_empty",
			setup: func(e *env) []string {
				cfg := e.tinyConfig("c.yaml", "")
				return []string{"train", "-config", cfg, "-set", `output.dir=""`}
			},
			msg: []string{`output\.dir`},
		},
		{
			// A command that does not exist.
			name:  "unknown_command",
			setup: func(e *env) []string { return []string{"train", "frobnicate"} },
			msg:   []string{`frobnicate`},
		},
		{
			// The baseline: the tiny config trains.
			name:  "train_ok",
			setup: func(e *env) []string { return trainSet(e) },
			ok:    trained,
		},
	}
}

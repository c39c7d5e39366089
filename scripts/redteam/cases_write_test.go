package redteam

import (
	"syscall"
)

// Problems of an output path: a file that is not a regular one, or one
// the command must not replace.
const (
	notRegularRE   = `(?i)fifo|named pipe|not a regular file|special file`
	refuseTargetRE = `(?i)run folder|run directory|inside the run|overwrit|replac|refus|would destroy|input`
)

// writeCases are writes that replace what they should not.
func writeCases() []tcase {
	return []tcase{
		{
			// export -o onto a named pipe: writing it waits for a reader
			// (a hang), and the temporary file renamed over it replaces
			// the pipe. It must be refused at once.
			name: "export_o_fifo",
			setup: func(e *env) []string {
				run := e.run("run")
				out := e.fifo("out.onnx")
				return []string{"train", "export", "-run", run, "-o", out}
			},
			msg:  []string{`out\.onnx`, notRegularRE},
			keep: []string{"out.onnx", "run"},
		},
		{
			// export -o onto a symbolic link to a file elsewhere: neither
			// the link nor the file it points to may be replaced.
			name: "export_o_symlink_outside",
			setup: func(e *env) []string {
				run := e.run("run")
				e.writeString("outside/victim.onnx", "the user's own file\n")
				out := e.symlink("../outside/victim.onnx", "out/model.onnx")
				return []string{"train", "export", "-run", run, "-o", out}
			},
			msg:  []string{`model\.onnx`, `(?i)symlink|symbolic link|not a regular file`},
			keep: []string{"outside", "out"},
		},
		{
			// export -o onto a character device node (made in the case's
			// folder, as /dev/null is: major 1, minor 3): it must be
			// refused, not replaced by a regular file.
			name: "export_o_char_device",
			root: true,
			setup: func(e *env) []string {
				run := e.run("run")
				out := e.path("null")
				e.must(syscall.Mknod(out, syscall.S_IFCHR|0o666, 1<<8|3))
				return []string{"train", "export", "-run", run, "-o", out}
			},
			msg:  []string{`null`, `(?i)device|not a regular file|special file`},
			keep: []string{"null", "run"},
		},
		{
			// export -o onto the model file of the run's own checkpoint:
			// that would destroy the checkpoint it exports.
			name: "export_o_checkpoint_model",
			setup: func(e *env) []string {
				run := e.run("run")
				return []string{"train", "export", "-run", run, "-o", ckpt(run, lastCkpt) + "/model.safetensors"}
			},
			msg:  []string{`model\.safetensors`, refuseTargetRE},
			keep: []string{"run"},
		},
		{
			// export -o onto the run's config.yaml: the run could no
			// longer be resumed, evaluated or exported.
			name: "export_o_run_config",
			setup: func(e *env) []string {
				run := e.run("run")
				return []string{"train", "export", "-run", run, "-o", run + "/config.yaml"}
			},
			msg:  []string{`config\.yaml`, refuseTargetRE},
			keep: []string{"run"},
		},
		{
			// train -out . from the folder that holds the user's
			// config.yaml and other files: the run's config.yaml,
			// metrics.jsonl and train.log would replace theirs. It must
			// ask for -overwrite and leave the folder as it is.
			name: "train_out_dot_user_folder",
			setup: func(e *env) []string {
				data := e.data("data")
				e.writeString("work/config.yaml", tinyConfigYAML(data))
				e.writeString("work/notes.txt", "the user's notes\n")
				e.writeString("work/metrics.jsonl", `{"the user's": "own metrics"}`+"\n")
				e.cwd = e.path("work")
				return []string{"train", "-config", "config.yaml", "-out", "."}
			},
			msg:  []string{`-overwrite`},
			keep: []string{"work"},
		},
		{
			// train -out into a folder that holds files but is no run:
			// without -overwrite nothing may be written there.
			name: "train_out_nonempty_folder",
			setup: func(e *env) []string {
				cfg := e.tinyConfig("c.yaml", "")
				e.writeString("stuff/a.txt", "a\n")
				e.writeString("stuff/sub/b.txt", "b\n")
				return []string{"train", "-config", cfg, "-out", e.path("stuff")}
			},
			msg:  []string{`stuff`, `-overwrite`},
			keep: []string{"stuff"},
		},
		{
			// train -out naming an existing regular file.
			name: "train_out_is_file",
			setup: func(e *env) []string {
				cfg := e.tinyConfig("c.yaml", "")
				out := e.writeString("result.txt", "the user's result\n")
				return []string{"train", "-config", cfg, "-out", out}
			},
			msg:  []string{`result\.txt`, `(?i)not a directory|is a file|exists`},
			keep: []string{"result.txt"},
		},
		{
			// export.onnx naming the run's own config.yaml: the export at
			// the end would replace the config and break the run. It must
			// be refused before training.
			name: "export_onnx_is_run_config",
			setup: func(e *env) []string {
				out := e.path("run")
				cfg := e.tinyConfig("c.yaml", "export: {onnx: \""+out+"/config.yaml\"}\n")
				return []string{"train", "-config", cfg, "-out", out}
			},
			msg: []string{`export\.onnx`, `config\.yaml`},
		},
		{
			// The same through resume: -set export.onnx=RUN/config.yaml
			// must be refused and the run's config left as it is.
			name: "resume_export_onnx_over_config",
			setup: func(e *env) []string {
				run := e.run("run")
				return []string{"train", "resume", "-run", run, "-set", "train.epochs=2", "-set", "export.onnx=" + run + "/config.yaml"}
			},
			msg:  []string{`export\.onnx`, `config\.yaml`},
			keep: []string{"run/config.yaml", "run/checkpoints"},
		},
		{
			// export.onnx naming the training data: the export would
			// replace the data the run reads. (Added: not in the issue.)
			name: "export_onnx_over_training_data",
			setup: func(e *env) []string {
				cfg := e.tinyConfig("c.yaml", "export: {onnx: \""+e.path("data/"+trainImages)+"\"}\n")
				return []string{"train", "-config", cfg, "-out", e.path("run")}
			},
			msg:  []string{`export\.onnx`, trainImages},
			keep: []string{"data"},
		},
		{
			// -cpuprofile naming the config file itself: the profile
			// would truncate the user's config. (Added: not in the issue.)
			name: "cpuprofile_over_config",
			setup: func(e *env) []string {
				cfg := e.tinyConfig("c.yaml", "")
				return []string{"train", "-config", cfg, "-cpuprofile", cfg, "-out", e.path("run")}
			},
			msg:  []string{`-cpuprofile`, `c\.yaml`},
			keep: []string{"c.yaml"},
		},
	}
}

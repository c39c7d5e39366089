// Command train trains, resumes, evaluates, runs and exports Hora models
// described by a YAML config.
//
// Usage:
//
//	train [train] -config FILE [-set key=value ...] [-out DIR] [-q] [-json] [-restarts N -np N]
//	train resume -run DIR [-set key=value ...]
//	train eval -run DIR [-checkpoint last|best|step-N]
//	train predict -run DIR [-checkpoint ...] IMAGE... | -prompt TEXT
//	train export -run DIR [-checkpoint ...] -o FILE.onnx
//	train help config
//
// A run writes its folder (output.dir): config.yaml, train.log,
// metrics.jsonl, curves.png, the final model.safetensors and
// checkpoints/step-N/ folders (safetensors files and a JSON manifest with
// the position, random state and file digests), written so that a
// process killed at any moment leaves the last complete checkpoint
// intact. "train resume" continues from it, bit for bit as an
// uninterrupted run with the same number of ranks, or resharded on
// another number; "-restarts N" restarts a failed job from it.
//
// Exit statuses: 0 done, 1 failure, 2 bad input (the message names the
// file, line, key or sample), 3 the loss diverged (NaN or Inf), 130
// interrupted (a checkpoint was written).
//
// The config keys are listed in docs/config.md (go generate ./train
// writes it; "train help config" prints it).
//
// The command is package train's Main: a program that registers its own
// models or data sets (train.RegisterModel, train.RegisterDataset) and
// calls train.Main is this command with them.
package main

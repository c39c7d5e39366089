// Package train is Hora's trainer as a library: what the train command
// does, for programs of their own.
//
//   - Main and Run are the whole command (train, resume, eval, predict,
//     export; YAML configs and -set; mpirun and -restarts; checkpoints,
//     exact resume, metrics, curves, progress). cmd/train is main calling
//     Main.
//   - RegisterModel and RegisterDataset add a model or a data set written
//     in Go under a name a config can use (model.name, data.name), with
//     its own keys under model.args or data.args, decoded strictly with
//     file:line:column errors.
//   - Fit and Resume run the same loop on a model and data built in Go,
//     with Callbacks that see each step's and epoch's metrics and can stop
//     the run.
//   - LoadConfig, ParseConfig and DefaultConfig give a Config; NewModel
//     builds the model a config names; Step takes one training step as a
//     run takes it (the benchmarks time it); ConfigReference is the
//     reference of every key (docs/config.md, written by go generate).
//
// A run writes its folder (output.dir): config.yaml, train.log,
// metrics.jsonl, curves.png, model.safetensors and checkpoints/step-N/
// (safetensors files and a manifest with the position, the random state
// and file digests), so that a process killed at any moment leaves the
// last complete checkpoint intact and resume continues bit for bit.
package train

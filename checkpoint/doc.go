// Package checkpoint saves and loads named tensors as safetensors files:
// model weights, optimizer state, or both in one file.
//
// # Overview
//
// Save writes a map of tensors and an optional string→string metadata map;
// Load reads such a file back onto the CPU; LoadInto restores a file into
// existing tensors (on any device) in place, which is how training resumes:
//
//	err := checkpoint.Save("step-1000.safetensors", state, map[string]string{"step": "1000"})
//	...
//	meta, err := checkpoint.LoadInto("step-1000.safetensors", state)
//
// The package knows nothing about layers or optimizers: callers pass maps
// (state dicts) and choose the names, for instance "model.fc.weight" and
// "optim.fc.weight.exp_avg" when one file holds both.
//
// # File format
//
// A safetensors file is, in order:
//
//   - 8 bytes: N, the length of the header, a little-endian uint64;
//   - N bytes: the header, a UTF-8 JSON object mapping each tensor name to
//     {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, plus
//     an optional "__metadata__" object of string values;
//   - the data section: every tensor's elements in row-major order,
//     little-endian, at [begin, end) counted from the first byte after the
//     header, packed with no gaps or overlaps and nothing after the last.
//
// Hora reads and writes the dtypes F32, F64 and I64 (device.Float32,
// device.Float64 and device.Int64). Save writes the tensors in sorted name
// order, the metadata first, compact JSON, and pads the header with spaces
// to a multiple of 8 bytes, as the reference implementation does; Load
// accepts any order, any JSON whitespace and unpadded headers, so files
// written by the Python and Rust safetensors libraries load unchanged.
//
// # Invariants
//
// Save is atomic: it writes a temporary file in the destination's
// directory, syncs it, and renames it over the destination, so a crash or
// an error leaves either the old file or the new one, never a mix. An
// error also removes the temporary file; only a crash can leave one behind
// (named ".NAME.tmp-*", beside the destination).
//
// Load validates the whole file before it allocates a tensor and never
// panics on malformed input. Its errors begin with the file's path and say
// what is wrong with the expected and the found values; they match
// ErrFormat with errors.Is. LoadInto checks every destination tensor
// against the file, and that the file holds no other tensor, before it
// copies anything; its mismatch errors match ErrMismatch.
package checkpoint

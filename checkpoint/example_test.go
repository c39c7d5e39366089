package checkpoint_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"

	"github.com/hora-dl/hora/checkpoint"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// Example saves two tensors with some metadata, loads them back and prints
// what the file holds.
func Example() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	state := map[string]*tensor.Tensor{
		"fc.weight": tensor.FromFloat32([]float32{1, 2, 3, 4, 5, 6}, 2, 3),
		"fc.bias":   tensor.FromFloat32([]float32{0.5, -0.5}, 2),
	}
	if err := checkpoint.Save(path, state, map[string]string{"epoch": "3"}); err != nil {
		log.Fatal(err)
	}

	loaded, meta, err := checkpoint.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	names := make([]string, 0, len(loaded))
	for name := range loaded {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Println(name, loaded[name].DType(), loaded[name].Shape())
	}
	fmt.Println("epoch", meta["epoch"])
	// Output:
	// fc.bias float32 [2]
	// fc.weight float32 [2 3]
	// epoch 3
}

// ExampleLoadInto resumes from a checkpoint: the file is copied into the
// existing tensors in place, after every name, shape and dtype is checked.
func ExampleLoadInto() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "step-100.safetensors")

	saved := map[string]*tensor.Tensor{"w": tensor.FromFloat32([]float32{1, 2}, 2)}
	if err := checkpoint.Save(path, saved, map[string]string{"step": "100"}); err != nil {
		log.Fatal(err)
	}

	w := tensor.New(tensor.CPU(), device.Float32, 2) // the live parameter
	meta, err := checkpoint.LoadInto(path, map[string]*tensor.Tensor{"w": w})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("step", meta["step"], "w", w.Float32s())

	_, err = checkpoint.LoadInto(path, map[string]*tensor.Tensor{"w": tensor.New(tensor.CPU(), device.Float32, 3)})
	fmt.Println(errors.Is(err, checkpoint.ErrMismatch))
	// Output:
	// step 100 w [1 2]
	// true
}

package redteam

import (
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hora-dl/hora/onnx/onnxpb"
)

// onnxcheck reports a case whose model or data is broken as a failed
// case (exit status 1, the FAIL line on stdout); a usage error is 2.
var onnxcheckExits = []int{1, 2}

// onnxcheckCase writes a backend-test folder and checks it.
func onnxcheckCase(e *env, model []byte, inputs, outputs []*onnxpb.TensorProto) []string {
	return []string{"onnxcheck", e.onnxCase("case", model, inputs, outputs)}
}

// xIn and yOut are the data set of identityGraph(2).
func xIn() *onnxpb.TensorProto  { return floatTensor("x", []int64{2}, []float32{1, 2}) }
func yOut() *onnxpb.TensorProto { return floatTensor("y", []int64{2}, []float32{1, 2}) }

// trainONNX fine-tunes the ONNX file at model on the tiny data set.
func trainONNX(e *env, model string) []string {
	cfg := e.onnxTrainConfig("c.yaml", model)
	return []string{"train", "-config", cfg, "-out", e.path("run")}
}

// onnxCases are hostile ONNX files, for onnxcheck and for train's model
// "onnx".
func onnxCases() []tcase {
	return []tcase{
		{
			// Random bytes as model.onnx.
			name:  "onnx_random_bytes_onnxcheck",
			setup: func(e *env) []string { return onnxcheckCase(e, garbage(2000, 11), nil, nil) },
			msg:   []string{`model\.onnx`, `(?i)proto|parse|wire|invalid|not an? (valid )?onnx`},
			exits: onnxcheckExits,
		},
		{
			// Random bytes as model.file.
			name:  "onnx_random_bytes_train",
			setup: func(e *env) []string { return trainONNX(e, e.write("garbage.onnx", garbage(2000, 11))) },
			msg:   []string{`garbage\.onnx`, `(?i)proto|parse|wire|invalid|not an? (valid )?onnx`},
		},
		{
			// A valid model cut in the middle.
			name: "onnx_truncated_train",
			setup: func(e *env) []string {
				b := modelBytes(e, classifierGraph(nil, nil))
				return trainONNX(e, e.write("cut.onnx", b[:len(b)/2]))
			},
			msg: []string{`cut\.onnx`},
		},
		{
			// model.onnx is a folder.
			name: "onnx_model_is_directory_onnxcheck",
			setup: func(e *env) []string {
				e.mkdir("case/model.onnx")
				e.write("case/test_data_set_0/input_0.pb", tensorBytes(e, xIn()))
				return []string{"onnxcheck", e.path("case")}
			},
			msg:   []string{`model\.onnx`, `(?i)is a directory`},
			exits: onnxcheckExits,
		},
		{
			// model.file is a folder.
			name:  "onnx_model_is_directory_train",
			setup: func(e *env) []string { return trainONNX(e, e.mkdir("model.onnx")) },
			msg:   []string{`model\.onnx`, `(?i)is a directory`},
		},
		{
			// onnxcheck on a folder that does not exist.
			name:  "onnxcheck_missing_folder",
			setup: func(e *env) []string { return []string{"onnxcheck", e.path("nothere")} },
			msg:   []string{`nothere`},
		},
		{
			// onnxcheck on an empty folder.
			name:  "onnxcheck_empty_folder",
			setup: func(e *env) []string { return []string{"onnxcheck", e.mkdir("empty")} },
			msg:   []string{`(?i)no model\.onnx`},
		},
		{
			// A test input that is random bytes.
			name: "onnxcheck_input_garbage",
			setup: func(e *env) []string {
				dir := e.onnxCase("case", modelBytes(e, identityGraph(2)), nil, []*onnxpb.TensorProto{yOut()})
				e.write("case/test_data_set_0/input_0.pb", garbage(100, 12))
				return []string{"onnxcheck", dir}
			},
			msg:   []string{`input_0\.pb`},
			exits: onnxcheckExits,
		},
		{
			// The baseline: a correct case passes.
			name: "onnxcheck_ok",
			setup: func(e *env) []string {
				return onnxcheckCase(e, modelBytes(e, identityGraph(2)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			ok: stdoutMatches(`PASS case/test_data_set_0`),
		},
		{
			// External data whose declared length (64 GiB, as the tensor's
			// shape wants) is far beyond its 16-byte file: an error
			// naming the file, not a 64 GiB buffer.
			name: "onnx_external_length_exceeds_file",
			setup: func(e *env) []string {
				e.write("case/w.bin", make([]byte, 16))
				w := externalTensor("W", f32, []int64{1 << 30, 16}, "location", "w.bin", "length", strconv.Itoa(4<<34))
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, w)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`w\.bin`, `(?i)exceed|larger|ends|beyond|only \d+ bytes|file (is|has)|size|length`},
			exits: onnxcheckExits,
		},
		{
			// The same tensor in a model that train fine-tunes.
			name: "onnx_external_length_exceeds_file_train",
			setup: func(e *env) []string {
				e.write("w.bin", make([]byte, 16))
				g := classifierGraph(nil, nil)
				g.Initializer = append(g.Initializer, externalTensor("huge", f32, []int64{1 << 30, 16}, "location", "w.bin", "length", strconv.Itoa(4<<34)))
				return trainONNX(e, e.write("model.onnx", modelBytes(e, g)))
			},
			msg: []string{`w\.bin`, `(?i)exceed|larger|ends|beyond|only \d+ bytes|file (is|has)|size|length`},
		},
		{
			// External data read through a symbolic link in the model's
			// folder (d -> /etc, location d/passwd): the data must stay
			// inside the folder, links or not.
			name: "onnx_external_symlinked_dir",
			setup: func(e *env) []string {
				size, _ := fileDigest("/etc/passwd")
				if size == 0 {
					size = 1
				}
				e.symlink("/etc", "case/d")
				secret := externalTensor("secret", u8, []int64{size}, "location", "d/passwd")
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, secret)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`d/passwd`, `(?i)outside|symlink|symbolic|escape`},
			exits: onnxcheckExits,
		},
		{
			// External data at an absolute path.
			name: "onnx_external_absolute_path",
			setup: func(e *env) []string {
				secret := externalTensor("secret", u8, []int64{4}, "location", "/etc/passwd", "length", "4")
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, secret)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`/etc/passwd`, `(?i)outside`},
			exits: onnxcheckExits,
		},
		{
			// External data in the parent folder.
			name: "onnx_external_dotdot",
			setup: func(e *env) []string {
				e.write("secret.bin", []byte("1234"))
				secret := externalTensor("secret", u8, []int64{4}, "location", "../secret.bin")
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, secret)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`secret\.bin`, `(?i)outside`},
			exits: onnxcheckExits,
		},
		{
			// External data in a named pipe nobody writes: opening it
			// would wait forever. (Added: not in the issue.)
			name: "onnx_external_fifo",
			setup: func(e *env) []string {
				e.fifo("case/pipe.bin")
				w := externalTensor("W", f32, []int64{4}, "location", "pipe.bin")
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, w)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`pipe\.bin`, notRegularRE},
			exits: onnxcheckExits,
		},
		{
			// ConvTranspose asked for a 100000×100000 output.
			name: "onnx_convtranspose_huge_output",
			setup: func(e *env) []string {
				g := &onnxpb.GraphProto{
					Node: []*onnxpb.NodeProto{node("ConvTranspose", "deconv", []string{"x", "W"}, []string{"y"},
						attrInts("output_shape", 100000, 100000))},
					Initializer: []*onnxpb.TensorProto{floatTensor("W", []int64{1, 1, 3, 3}, ramp(9))},
					Input:       []*onnxpb.ValueInfoProto{vi("x", f32, 1, 1, 2, 2)},
					Output:      []*onnxpb.ValueInfoProto{vi("y", f32, 1, 1, 100000, 100000)},
				}
				x := floatTensor("x", []int64{1, 1, 2, 2}, ramp(4))
				y := floatTensor("y", []int64{1, 1, 2, 2}, ramp(4))
				return onnxcheckCase(e, modelBytes(e, g), []*onnxpb.TensorProto{x}, []*onnxpb.TensorProto{y})
			},
			msg:   []string{`ConvTranspose|deconv`, `(?i)output_shape|too (large|big)|elements|limit`},
			exits: onnxcheckExits,
		},
		{
			// Expand to [100000, 100000, 10].
			name: "onnx_expand_huge",
			setup: func(e *env) []string {
				g := &onnxpb.GraphProto{
					Node:        []*onnxpb.NodeProto{node("Expand", "expand", []string{"x", "shape"}, []string{"y"})},
					Initializer: []*onnxpb.TensorProto{intTensor("shape", []int64{3}, []int64{100000, 100000, 10})},
					Input:       []*onnxpb.ValueInfoProto{vi("x", f32, 1)},
					Output:      []*onnxpb.ValueInfoProto{vi("y", f32, 100000, 100000, 10)},
				}
				x := floatTensor("x", []int64{1}, []float32{1})
				return onnxcheckCase(e, modelBytes(e, g), []*onnxpb.TensorProto{x}, []*onnxpb.TensorProto{x})
			},
			msg:   []string{`Expand|expand`, `(?i)too (large|big)|elements|limit`},
			exits: onnxcheckExits,
		},
		{
			// Integer division by zero: a failed case naming Div and the
			// division by zero, not a panic nor a silent wrong value. The
			// reference holds what an unchecked division gives (the
			// smallest int64), so that a silent wrong result passes and
			// shows as "silent".
			name: "onnx_int_div_by_zero",
			setup: func(e *env) []string {
				g := &onnxpb.GraphProto{
					Node:   []*onnxpb.NodeProto{node("Div", "div", []string{"a", "b"}, []string{"y"})},
					Input:  []*onnxpb.ValueInfoProto{vi("a", i64, 2), vi("b", i64, 2)},
					Output: []*onnxpb.ValueInfoProto{vi("y", i64, 2)},
				}
				a := intTensor("a", []int64{2}, []int64{7, 8})
				b := intTensor("b", []int64{2}, []int64{0, 2})
				y := intTensor("y", []int64{2}, []int64{math.MinInt64, 4})
				return onnxcheckCase(e, modelBytes(e, g), []*onnxpb.TensorProto{a, b}, []*onnxpb.TensorProto{y})
			},
			msg:   []string{`Div|div`, `(?i)divi(de|sion) by zero`},
			exits: onnxcheckExits,
		},
		{
			// Loop with a trip count of 2^62 and a condition that stays
			// true: an error naming the loop, not 16 million iterations.
			name: "onnx_loop_huge_trip_count",
			setup: func(e *env) []string {
				return onnxcheckCase(e, modelBytes(e, loopGraph(false)),
					[]*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`Loop|loop`, `(?i)trip|iteration|\bM\b|too many|limit`},
			exits: onnxcheckExits,
		},
		{
			// The same loop stacking a 1000-float scan output at each
			// iteration.
			name: "onnx_loop_scan_bomb",
			setup: func(e *env) []string {
				return onnxcheckCase(e, modelBytes(e, loopGraph(true)),
					[]*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`Loop|loop`, `(?i)trip|iteration|\bM\b|too many|limit|too (large|big)`},
			exits: onnxcheckExits,
		},
		{
			// Two nodes that read each other's output: a cycle.
			name: "onnx_graph_cycle",
			setup: func(e *env) []string {
				g := &onnxpb.GraphProto{
					Node: []*onnxpb.NodeProto{
						node("Add", "a", []string{"x", "q"}, []string{"p"}),
						node("Relu", "b", []string{"p"}, []string{"q"}),
						node("Identity", "c", []string{"p"}, []string{"y"}),
					},
					Input:  []*onnxpb.ValueInfoProto{vi("x", f32, 2)},
					Output: []*onnxpb.ValueInfoProto{vi("y", f32, 2)},
				}
				return onnxcheckCase(e, modelBytes(e, g), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`(?i)cycle|order|not (a graph input|defined|produced)|before`},
			exits: onnxcheckExits,
		},
		{
			// An initializer with a negative dimension.
			name: "onnx_negative_dims",
			setup: func(e *env) []string {
				w := floatTensor("W", []int64{-1, 4}, ramp(4))
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, w)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`"W"|\bW\b`, `(?i)dim|shape|negative`},
			exits: onnxcheckExits,
		},
		{
			// An initializer of 2^33 × 2^33 elements (the product
			// overflows 64 bits) without data.
			name: "onnx_dims_overflow",
			setup: func(e *env) []string {
				w := &onnxpb.TensorProto{Name: ptr("W"), DataType: ptr(int32(f32)), Dims: []int64{1 << 33, 1 << 33}}
				return onnxcheckCase(e, modelBytes(e, identityGraph(2, w)), []*onnxpb.TensorProto{xIn()}, []*onnxpb.TensorProto{yOut()})
			},
			msg:   []string{`"W"|\bW\b`, `(?i)dim|shape|overflow|too (large|big)|elements`},
			exits: onnxcheckExits,
		},
		{
			// An ONNX model whose input declares a batch of 1, fine-tuned
			// with batches of 16: it trains (its operators take any
			// batch) or fails at the start naming the batch; no panic at
			// the first batch.
			name: "onnx_batch_fixed_at_1_declared",
			setup: func(e *env) []string {
				return trainONNX(e, e.write("model.onnx", modelBytes(e, classifierGraph([]int64{1, 1, tinySide, tinySide}, nil))))
			},
			msg: []string{`model\.onnx|model\.file`, `(?i)batch`},
			ok:  trained,
		},
		{
			// An ONNX model that really fixes the batch at 1 (Reshape to
			// [1, 64]): an error at the start naming the batch.
			name: "onnx_batch_fixed_at_1_reshape",
			setup: func(e *env) []string {
				g := classifierGraph([]int64{1, 1, tinySide, tinySide}, nil)
				g.Node[0] = node("Reshape", "reshape", []string{"input", "shape"}, []string{"flat"})
				g.Initializer = append(g.Initializer, intTensor("shape", []int64{2}, []int64{1, tinySide * tinySide}))
				return trainONNX(e, e.write("model.onnx", modelBytes(e, g)))
			},
			msg: []string{`model\.onnx|model\.file`, `(?i)batch`},
		},
		{
			// The baseline: a small ONNX classifier fine-tunes.
			name: "onnx_train_ok",
			setup: func(e *env) []string {
				return trainONNX(e, e.write("model.onnx", modelBytes(e, classifierGraph(nil, nil))))
			},
			ok: trained,
		},
		{
			// The baseline: the tiny run exports (into a folder export
			// creates).
			name: "export_ok",
			setup: func(e *env) []string {
				return []string{"train", "export", "-run", e.run("run"), "-o", e.path("out/model.onnx")}
			},
			ok: func(e *env, r *result) error {
				_, err := os.Stat(filepath.Join(e.dir, "out/model.onnx"))
				return err
			},
		},
	}
}

// loopGraph is y = Loop(M = 2^62, cond = true, x) whose body passes its
// carried value on (and, with scan, also outputs 1000 floats per
// iteration).
func loopGraph(scan bool) *onnxpb.GraphProto {
	body := &onnxpb.GraphProto{
		Name: ptr("body"),
		Node: []*onnxpb.NodeProto{
			node("Identity", "keep_cond", []string{"cond_in"}, []string{"cond_out"}),
			node("Identity", "keep_v", []string{"v_in"}, []string{"v_out"}),
		},
		Input:  []*onnxpb.ValueInfoProto{vi("i", i64), vi("cond_in", boolT), vi("v_in", f32, 2)},
		Output: []*onnxpb.ValueInfoProto{vi("cond_out", boolT), vi("v_out", f32, 2)},
	}
	outs := []string{"y"}
	outInfo := []*onnxpb.ValueInfoProto{vi("y", f32, 2)}
	if scan {
		body.Node = append(body.Node, node("Identity", "emit", []string{"block"}, []string{"s_out"}))
		body.Output = append(body.Output, vi("s_out", f32, 1000))
		outs = append(outs, "stacked")
		outInfo = append(outInfo, vi("stacked", f32, -1, 1000))
	}
	inits := []*onnxpb.TensorProto{intTensor("M", nil, []int64{1 << 62}), boolScalar("cond", true)}
	if scan {
		inits = append(inits, floatTensor("block", []int64{1000}, ramp(1000)))
	}
	return &onnxpb.GraphProto{
		Node:        []*onnxpb.NodeProto{node("Loop", "loop", []string{"M", "cond", "x"}, outs, attrGraph("body", body))},
		Initializer: inits,
		Input:       []*onnxpb.ValueInfoProto{vi("x", f32, 2)},
		Output:      outInfo,
	}
}

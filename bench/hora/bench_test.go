package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/bench/internal/benchjob"
	"github.com/hora-dl/hora/layers"
	"github.com/hora-dl/hora/tensor"
)

// The kernels and steps of `make bench` as go test benchmarks:
//
//	go test -run '^$' -bench . ./bench/hora

func BenchmarkSgemm(b *testing.B) {
	for _, n := range sgemmSizes {
		b.Run(sgemm(n).name, func(b *testing.B) { benchGEMM(b, sgemm(n)) })
	}
}

func BenchmarkMLPGEMM(b *testing.B) {
	for _, g := range mlpGEMMs() {
		b.Run(strings.NewReplacer(" ", "", "(", "", ")", "").Replace(g.name), func(b *testing.B) { benchGEMM(b, g) })
	}
}

func benchGEMM(b *testing.B, g gemm) {
	x, y := g.operands()
	arena := tensor.NewArena()
	for b.Loop() {
		g.run(x.WithArena(arena), y)
		arena.Reset()
	}
	b.ReportMetric(g.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkTrainStepMLP(b *testing.B) { benchTrainStep(newJob(b, "mlp"))(b) }

func BenchmarkTrainStepCNN(b *testing.B) { benchTrainStep(newJob(b, "cnn"))(b) }

// BenchmarkTrainStepZoo times the trainer's step of every zoo config, as
// the zoo group of make bench, one sub-benchmark per model (named as
// model.name), for profiles:
//
//	go test -run '^$' -bench TrainStepZoo/mobilenet -cpuprofile cpu.out ./bench/hora
func BenchmarkTrainStepZoo(b *testing.B) {
	for _, file := range zooConfigs {
		j, err := newZooJob(file)
		require.NoError(b, err)
		b.Run(j.Config.Model.Name, func(b *testing.B) {
			layers.Train(j.Model)
			for range warmUpSteps {
				_, _, err := j.Step()
				require.NoError(b, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _, err := j.Step()
				require.NoError(b, err)
			}
			b.ReportMetric(float64(j.Samples())*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
		require.NoError(b, j.Close())
	}
}

func BenchmarkInferenceCNN(b *testing.B) {
	j := newJob(b, "cnn")
	layers.Eval(j.Model)
	x, err := tensor.FromSlice(j.Dev, j.Batch.X, j.Batch.Shape...)
	require.NoError(b, err)
	for b.Loop() {
		j.Infer(x)
	}
	b.ReportMetric(float64(batchSize)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func newJob(tb testing.TB, name string) *benchjob.Job {
	j, err := newTrainJob(name)
	require.NoError(tb, err)
	return j
}

func TestMLPGEMMShapes(t *testing.T) {
	t.Parallel()
	var names []string
	for _, g := range mlpGEMMs() {
		names = append(names, g.name)
		a, b := g.operands()
		assert.Equal(t, []int{g.m, g.n}, g.run(a, b).Shape(), g.name)
	}
	assert.Equal(t, []string{
		"128x784x512 (fwd)", "128x512x256 (fwd)", "128x256x10 (fwd)",
		"128x10x256 (dX)", "10x128x256 (dW)",
		"128x256x512 (dX)", "256x128x512 (dW)",
		"512x128x784 (dW)",
	}, names)
}

func TestGEMMMatchesLinear(t *testing.T) {
	t.Parallel()
	// The forward product in the Linear layout equals the plain product
	// with the transpose copied.
	g := mlpGEMMs()[2]
	a, b := g.operands()
	want := tensor.MatMul(a, b.T().Contiguous())
	assert.True(t, tensor.AllClose(g.run(a, b), want, 1e-5, 1e-5))
}

func TestTrainStepLearns(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"mlp", "cnn"} {
		j := newJob(t, name)
		first, _, err := j.Step()
		require.NoError(t, err)
		var last float64
		for range 4 {
			last, _, err = j.Step()
			require.NoError(t, err)
		}
		assert.False(t, math.IsNaN(last), name)
		assert.Less(t, last, first, "%s: the loss on one repeated batch falls", name)
	}
}

func TestRunPrintsJSONLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run([]string{"-min-time", "1ms", "inference"}, &out))
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var fields map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &fields), line)
		if _, ok := fields["info"]; ok {
			continue
		}
		var r row
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		rows = append(rows, r)
	}
	require.Len(t, rows, 1)
	assert.Equal(t, row{Framework: "hora", Workload: "cnn inference batch 128", Unit: "samples/s", Value: rows[0].Value}, rows[0])
	assert.Greater(t, rows[0].Value, 0.0)
}

// TestRunRoundTrip checks that -round-trip prints one duration and
// measures nothing else.
func TestRunRoundTrip(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-round-trip"}, &out))
	d, err := time.ParseDuration(strings.TrimSpace(out.String()))
	require.NoError(t, err, "output %q", out.String())
	require.GreaterOrEqual(t, d, time.Duration(0))
}

// TestRunHostState checks that -host-state prints one of the states
// roundtrip.State tells.
func TestRunHostState(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"-host-state"}, &out))
	require.Contains(t, []string{"shared cache", "no shared cache", "one thread"}, strings.TrimSpace(out.String()))
}

func TestRunRejectsUnknownGroup(t *testing.T) {
	t.Parallel()
	err := run([]string{"sgem"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, `unknown group "sgem"`)
}

func TestLastMetrics(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(
		`{"epoch":1,"samples_per_sec":10,"test_accuracy":0.5}`+"\n"+
			`{"kind":"epoch","epoch":2,"samples_per_sec":20,"test_accuracy":0.75}`+"\n"+
			`{"kind":"eval","step":9,"test_accuracy":0.8}`+"\n\n"), 0o644))
	m, err := lastMetrics(path)
	require.NoError(t, err)
	assert.Equal(t, epochMetrics{SamplesPerSec: 20, TestAccuracy: 0.75}, m)

	require.NoError(t, os.WriteFile(path, nil, 0o644))
	_, err = lastMetrics(path)
	assert.ErrorContains(t, err, "no metrics")
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	calls := 0
	perSec := measure(20*time.Millisecond, func() { calls++; time.Sleep(time.Millisecond) })
	assert.GreaterOrEqual(t, calls, 2, "a warm-up call and at least one timed call")
	assert.Greater(t, perSec, 0.0)
	assert.LessOrEqual(t, perSec, 1000.0, "each call sleeps for 1 ms")
	// The warm-up call is not counted: perSec·20 ms ≤ timed calls = calls-1.
	assert.LessOrEqual(t, perSec*0.02, float64(calls-1))
}

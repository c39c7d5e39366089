package main

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "1,32", want: []int{1, 32}},
		{in: " 8 ", want: []int{8}},
		{in: "1,,2", err: `"" is not a positive integer`},
		{in: "0", err: `"0" is not a positive integer`},
		{in: "x", err: `"x" is not a positive integer`},
	} {
		got, err := parseBatches(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	assert.Equal(t, 0.0, median(nil))
}

// TestRunFlagErrors checks that bad flags and model names are errors that
// name them, before anything is exported or timed.
func TestRunFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{args: []string{"-batch", "0"}, err: "-batch"},
		{args: []string{"-repeat", "0"}, err: "-repeat 0"},
		{args: []string{"-threads", "0"}, err: "-threads 0"},
		{args: []string{"alexnet"}, err: `unknown model "alexnet"`},
	} {
		err := run(tc.args, io.Discard, io.Discard)
		assert.ErrorContains(t, err, tc.err, strings.Join(tc.args, " "))
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	c := &config{threads: 2, repeat: 1}
	require.NoError(t, c.table(&b, []*result{
		{model: "resnet18", batch: 1, horaMedian: 20, ortMedian: 10},
		{model: "resnet18", batch: 32, horaMedian: 10, ortMedian: 12},
		{model: "mobilenet_v2", batch: 32, horaMedian: 30, ortMedian: math.NaN()},
	}))
	out := b.String()
	assert.Contains(t, out, "speed (ort/hora)")
	assert.Contains(t, out, cpuName())
	assert.Regexp(t, `resnet18\s+1\s+20\.00\s+10\.00\s+0\.50×\s+≥ 1× ✘`, out)
	assert.Regexp(t, `resnet18\s+32\s+10\.00\s+12\.00\s+1\.20×\s+≥ 1× ✔`, out)
	assert.Regexp(t, `mobilenet_v2\s+32\s+30\.00\s+NaN\s+NaN×\s+≥ 1× ✘`, out)
	assert.Contains(t, out, "2 target(s) missed")

	b.Reset()
	c.horaOnly = true
	require.NoError(t, c.table(&b, []*result{{model: "resnet18", batch: 1, horaMedian: 20, ortMedian: math.NaN()}}))
	assert.Regexp(t, `resnet18\s+1\s+20\.00\s+NaN\s+NaN×\s+≥ 1× –`, b.String())
	assert.Contains(t, b.String(), "no target checked")
}

// TestRelDiff checks the comparison of a run against the reference run:
// equal outputs, rounding, a wrong value, other lengths and NaN.
func TestRelDiff(t *testing.T) {
	assert.Equal(t, 0.0, relDiff([]float64{1, -2}, []float64{1, -2}))
	assert.InDelta(t, 1e-7, relDiff([]float64{1, -2 + 2e-7}, []float64{1, -2}), 1e-12)
	assert.Greater(t, relDiff([]float64{1, 3}, []float64{1, -2}), maxRelDiff)
	assert.True(t, math.IsInf(relDiff([]float64{1}, []float64{1, 2}), 1))
	assert.False(t, relDiff([]float64{math.NaN(), 1}, []float64{1, 1}) <= maxRelDiff)
}

package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/hora-dl/hora/onnx/onnxtest"
)

// tally counts results overall and per operator.
type tally struct {
	passed, failed, unsupported int
	known                       int // failures of cases with known wrong references
	perOp                       map[string]*opCount
}

type opCount struct{ passed, failed, unsupported int }

func newTally() *tally { return &tally{perOp: map[string]*opCount{}} }

// caseOp names the operator a test case is about: the one its name
// starts with (test_averagepool_2d → AveragePool), else its first
// operator.
func caseOp(r onnxtest.Result) string {
	name := strings.ToLower(strings.TrimPrefix(r.Case, "test_"))
	name = strings.ReplaceAll(name, "_", "")
	best := ""
	for _, op := range r.Ops {
		if strings.HasPrefix(name, strings.ToLower(op)) && len(op) > len(best) {
			best = op
		}
	}
	if best == "" && len(r.Ops) > 0 {
		best = r.Ops[0]
	}
	if best == "" {
		best = "(none)"
	}
	return best
}

func (t *tally) add(r onnxtest.Result) {
	op := caseOp(r)
	c := t.perOp[op]
	if c == nil {
		c = &opCount{}
		t.perOp[op] = c
	}
	switch r.Status {
	case onnxtest.Pass:
		t.passed++
		c.passed++
	case onnxtest.Fail:
		t.failed++
		c.failed++
	default:
		t.unsupported++
		c.unsupported++
	}
}

func (t *tally) printByOp(w io.Writer) {
	ops := make([]string, 0, len(t.perOp))
	for op := range t.perOp {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return strings.ToLower(ops[i]) < strings.ToLower(ops[j]) })
	fmt.Fprintf(w, "%-28s %6s %6s %11s\n", "operator", "passed", "failed", "unsupported")
	for _, op := range ops {
		c := t.perOp[op]
		fmt.Fprintf(w, "%-28s %6d %6d %11d\n", op, c.passed, c.failed, c.unsupported)
	}
}

// readKnown reads a file of cases with known wrong references: one per
// line, the case's folder name and then the reason; # starts a comment.
// It must be a regular file (a named pipe would block the read).
func readKnown(path string) (map[string]string, error) {
	known := map[string]string{}
	if path == "" {
		return known, nil
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("-known %s: not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		if reason = strings.TrimSpace(reason); reason == "" {
			return nil, fmt.Errorf("%s:%d: %q has no reason", path, i+1, name)
		}
		known[name] = reason
	}
	return known, nil
}

// Command onnxcheck runs ONNX backend-test folders through Hora's importer
// and compares the results with the expected outputs: the command line of
// package onnx/onnxtest.
//
//	onnxcheck [-rtol 1e-4] [-atol 1e-5] [-by-op] [-q] [-known FILE] [-ops-markdown FILE] DIR...
//
// Each DIR is a test case (model.onnx plus test_data_set_N/input_K.pb and
// output_K.pb) or a folder of such cases (the "node" folder of the ONNX
// conformance suite, say). onnxcheck prints one line per data set:
//
//	PASS test_relu/test_data_set_0 max_abs=0 max_rel=0
//	FAIL test_pow/test_data_set_0 output 0 "z": max_abs=2 max_rel=0.5 at index 3 (got 6, want 4)
//	UNSUPPORTED test_unique: node #0 (Unique, opset 17): not supported: operator Unique
//
// and a closing line "N passed, M failed (K unsupported)". The exit status
// is 1 when a case failed, 2 on a usage error or a file that cannot be
// used (a DIR that is missing or not a folder; a model.onnx or
// input/output .pb that is not a regular file, not ONNX, or whose external
// data is outside its folder or the wrong size): then onnxcheck stops with
// a one-line error naming the file. An element is close when
// |got - want| <= atol + rtol·|want|; NaN matches NaN.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hora-dl/hora/onnx"
	"github.com/hora-dl/hora/onnx/onnxtest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("onnxcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rtol := fs.Float64("rtol", 1e-4, "relative tolerance")
	atol := fs.Float64("atol", 1e-5, "absolute tolerance")
	byOp := fs.Bool("by-op", false, "after the cases, print passed/total per operator")
	quiet := fs.Bool("q", false, "print only failures and the summary")
	knownFile := fs.String("known", "", "`FILE` of cases with wrong references (name, then reason, per line): reported KNOWN, not FAIL")
	opsMarkdown := fs.String("ops-markdown", "", "write the operator coverage table (Markdown) with these results to `FILE`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: onnxcheck [-rtol R] [-atol A] [-by-op] [-q] DIR...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	known, err := readKnown(*knownFile)
	if err != nil {
		fmt.Fprintln(stderr, "onnxcheck:", err)
		return 2
	}
	var cases []string
	for _, dir := range fs.Args() {
		found, err := onnxtest.Cases(dir)
		if err != nil {
			fmt.Fprintln(stderr, "onnxcheck:", err)
			return 2
		}
		cases = append(cases, found...)
	}
	tally := newTally()
	for _, dir := range cases {
		for _, r := range onnxtest.Check(dir, onnxtest.Tolerance{RTol: *rtol, ATol: *atol}) {
			if errors.Is(r.Err, onnx.ErrBadFile) {
				fmt.Fprintln(stderr, "onnxcheck:", oneLine(r.Err.Error()))
				return 2
			}
			if reason, ok := known[filepath.Base(dir)]; ok && r.Status == onnxtest.Fail {
				tally.known++
				fmt.Fprintf(stdout, "KNOWN %s %s (expected: %s)\n", r.Case, r.Detail, reason)
				continue
			}
			tally.add(r)
			if !*quiet || r.Status == onnxtest.Fail {
				fmt.Fprintln(stdout, r)
			}
		}
	}
	if *byOp {
		tally.printByOp(stdout)
	}
	if *opsMarkdown != "" {
		var b strings.Builder
		writeOpsMarkdown(&b, tally)
		if err := os.WriteFile(*opsMarkdown, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(stderr, "onnxcheck:", err)
			return 2
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed (%d unsupported", tally.passed, tally.failed, tally.unsupported)
	if tally.known > 0 {
		fmt.Fprintf(stdout, ", %d known: wrong or random references", tally.known)
	}
	fmt.Fprintln(stdout, ")")
	if tally.failed > 0 {
		return 1
	}
	return 0
}

// oneLine joins the lines of s with "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

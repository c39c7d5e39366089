package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hora-dl/hora/onnx"
)

// writeOpsMarkdown writes the operator coverage table: every operator
// Hora implements, the opsets where its implementation changes, whether
// it is differentiable, and its conformance results in t (when the suite
// was run); then the operators of the suite that Hora lacks.
func writeOpsMarkdown(w io.Writer, t *tally) {
	fmt.Fprintln(w, "| Operator | Opsets | Forward | Backward (trainable) | Conformance tests passed |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	supported := map[string]bool{}
	for _, s := range onnx.SupportedOps() {
		supported[s.Op] = true
		first := max(s.Versions[0], onnx.MinOpset)
		opsets := fmt.Sprintf("%d–%d", first, onnx.MaxOpset)
		var changes []string
		for _, v := range s.Versions[1:] {
			if v > first {
				changes = append(changes, fmt.Sprint(v))
			}
		}
		if len(changes) > 0 {
			opsets += " (versions " + strings.Join(changes, ", ") + ")"
		}
		grad := "yes"
		if !s.Differentiable {
			grad = "no (integer or constant outputs)"
		}
		conf := "—"
		if c := t.perOp[s.Op]; c != nil {
			conf = fmt.Sprintf("%d / %d", c.passed, c.passed+c.failed+c.unsupported)
			if c.unsupported > 0 {
				conf += fmt.Sprintf(" (%d unsupported)", c.unsupported)
			}
		}
		fmt.Fprintf(w, "| %s | %s | yes | %s | %s |\n", s.Op, opsets, grad, conf)
	}
	var missing []string
	for op, c := range t.perOp {
		if !supported[op] && op != "(none)" {
			missing = append(missing, fmt.Sprintf("%s (%d)", op, c.passed+c.failed+c.unsupported))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		fmt.Fprintf(w, "\nOperators of the conformance suite that Hora does not implement (number of tests): %s.\n", strings.Join(missing, ", "))
	}
	fmt.Fprintf(w, "\nConformance suite (onnx 1.12 node tests): %d passed, %d failed, %d unsupported", t.passed, t.failed, t.unsupported)
	if t.known > 0 {
		fmt.Fprintf(w, ", and %d cases whose references no implementation can match (listed with the reasons in onnx/testdata/conformance-known.txt)", t.known)
	}
	fmt.Fprintln(w, ".")
}

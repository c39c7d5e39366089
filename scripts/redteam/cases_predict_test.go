package redteam

import (
	"encoding/json"
	"fmt"
	"strings"
)

// predictArgs classifies files with the shared tiny run.
func predictArgs(e *env, files ...string) []string {
	return append([]string{"train", "predict", "-run", e.run("run")}, files...)
}

// lmPredictArgs continues a text with the shared language model run.
func lmPredictArgs(e *env, flags ...string) []string {
	return append([]string{"train", "predict", "-run", e.lmRun("run")}, flags...)
}

// jsonLines checks that stdout holds n JSON objects, each with key.
func jsonLines(n int, key string) func(e *env, r *result) error {
	return func(e *env, r *result) error {
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != n {
			return fmt.Errorf("%d lines of output, want %d: %q", len(lines), n, r.stdout)
		}
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				return fmt.Errorf("not JSON: %q", l)
			}
			if _, ok := m[key]; !ok {
				return fmt.Errorf("no %q in %s", key, l)
			}
		}
		return nil
	}
}

// predictCases are hostile images and flags for predict.
func predictCases() []tcase {
	return []tcase{
		{
			// A small PNG whose header declares 60000×60000 RGBA pixels
			// (14 GB decoded).
			name:  "predict_png_bomb",
			setup: func(e *env) []string { return predictArgs(e, e.write("big.png", hugePNG(60000, 60000))) },
			msg:   []string{`big\.png`, `(?i)too (large|big)|dimensions|60000|pixels`},
		},
		{
			// A 54-byte BMP whose header declares 60000×60000 pixels.
			name:  "predict_bmp_bomb",
			setup: func(e *env) []string { return predictArgs(e, e.write("big.bmp", hugeBMP(60000, 60000))) },
			msg:   []string{`big\.bmp`, `(?i)too (large|big)|dimensions|60000|pixels|truncated|unexpected EOF`},
		},
		{
			// A PNG cut short.
			name:  "predict_truncated_png",
			setup: func(e *env) []string { return predictArgs(e, e.write("cut.png", smallPNG()[:40])) },
			msg:   []string{`cut\.png`},
		},
		{
			// A file that does not exist.
			name:  "predict_missing_file",
			setup: func(e *env) []string { return predictArgs(e, e.path("nothere.png")) },
			msg:   []string{`nothere\.png`, `(?i)no such file|does not exist|not found`},
		},
		{
			// A folder without images.
			name:  "predict_folder_without_images",
			setup: func(e *env) []string { return predictArgs(e, e.mkdir("empty")) },
			msg:   []string{`empty`, `(?i)no image`},
		},
		{
			// An IDX file whose name lacks "idx3": either read as IDX (by
			// its magic number) or an error that says it looks like one;
			// not "image: unknown format".
			name: "predict_idx_without_idx3_name",
			setup: func(e *env) []string {
				return predictArgs(e, e.write("digits.ubyte", idxImages(3, tinySide, tinySide, 4)))
			},
			msg: []string{`digits\.ubyte`, `(?i)\bidx\b`},
			ok:  jsonLines(3, "index"),
		},
		{
			// The baseline: an IDX file named as Fashion-MNIST's.
			name: "predict_idx_ok",
			setup: func(e *env) []string {
				return predictArgs(e, e.write("x-idx3-ubyte", idxImages(3, tinySide, tinySide, 4)))
			},
			ok: jsonLines(3, "index"),
		},
		{
			// The baseline: one grey PNG of the model's size.
			name:  "predict_png_ok",
			setup: func(e *env) []string { return predictArgs(e, e.write("ok.png", smallPNG())) },
			ok:    jsonLines(1, "class"),
		},
		{
			// A colour PNG with transparency, for a grey model: converted.
			name:  "predict_rgba_png_ok",
			setup: func(e *env) []string { return predictArgs(e, e.write("rgba.png", smallRGBAPNG())) },
			ok:    jsonLines(1, "class"),
		},
		{
			// -top-k -3 given explicitly: an error, not "no list".
			name:  "predict_topk_negative",
			setup: func(e *env) []string { return append(predictArgs(e), "-top-k", "-3", e.write("ok.png", smallPNG())) },
			msg:   []string{`top-k`},
		},
		{
			// -temperature -1 given explicitly to a language model: -1 is
			// the flag's "unset" value, but one the user typed is an
			// error.
			name:  "predict_lm_temperature_negative",
			setup: func(e *env) []string { return lmPredictArgs(e, "-temperature", "-1", "-prompt", "the ") },
			msg:   []string{`temperature`},
		},
		{
			// -top-k -3 to a language model.
			name:  "predict_lm_topk_negative",
			setup: func(e *env) []string { return lmPredictArgs(e, "-top-k", "-3", "-prompt", "the ") },
			msg:   []string{`top-k`},
		},
		{
			// -length -5 to a language model.
			name:  "predict_lm_length_negative",
			setup: func(e *env) []string { return lmPredictArgs(e, "-length", "-5", "-prompt", "the ") },
			msg:   []string{`length`},
		},
		{
			// -length 1e12: refused, not generated until the time limit.
			name:  "predict_lm_length_huge",
			setup: func(e *env) []string { return lmPredictArgs(e, "-length", "1000000000000", "-prompt", "the ") },
			msg:   []string{`length`},
		},
		{
			// The baseline: a language model continues a prompt.
			name:  "predict_lm_ok",
			setup: func(e *env) []string { return lmPredictArgs(e, "-length", "10", "-prompt", "the ") },
			ok:    jsonLines(1, "text"),
		},
	}
}

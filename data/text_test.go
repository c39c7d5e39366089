package data_test

import (
	"encoding/json"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/data"
)

func TestCharVocab(t *testing.T) {
	t.Parallel()
	v := data.NewCharVocab("hello, wörld\nhello")
	assert.Equal(t, []rune("\n ,dehlorwö"), v.Runes())
	assert.Equal(t, 11, v.Size())

	ids, err := v.Encode("wörld\n")
	require.NoError(t, err)
	assert.Equal(t, []int32{9, 10, 8, 6, 3, 0}, ids)
	assert.Equal(t, "wörld\n", v.Decode(ids))
	assert.Equal(t, "h\uFFFDe\uFFFD", v.Decode([]int32{5, 11, 4, -1}), "ids outside the vocabulary decode to U+FFFD")

	_, err = v.Encode("hölle?")
	assert.EqualError(t, err, `data: CharVocab.Encode: rune '?' (U+003F) at byte offset 6 is not in the vocabulary of 11 runes`)

	empty := data.NewCharVocab("")
	assert.Zero(t, empty.Size())
	_, err = empty.Encode("a")
	assert.Error(t, err)
}

func TestCharVocabJSON(t *testing.T) {
	t.Parallel()
	v := data.NewCharVocab("the quick \"brown\" fox\t→ ✓")
	b, err := json.Marshal(map[string]any{"vocab": v})
	require.NoError(t, err)
	var back struct{ Vocab *data.CharVocab }
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, v.Runes(), back.Vocab.Runes())
	ids, err := back.Vocab.Encode("fox → ✓")
	require.NoError(t, err)
	assert.Equal(t, "fox → ✓", v.Decode(ids))

	cases := []struct{ in, msg string }{
		{`"ba"`, `data: CharVocab: rune 1 ('a') is not after rune 0 ('b'): expected sorted unique runes`},
		{`"abb"`, `data: CharVocab: rune 2 ('b') is not after rune 1 ('b'): expected sorted unique runes`},
		{`["a"]`, `data: CharVocab: expected a JSON string of runes: json: cannot unmarshal array into Go value of type string`},
	}
	for _, c := range cases {
		var v data.CharVocab
		assert.EqualError(t, json.Unmarshal([]byte(c.in), &v), c.msg, c.in)
	}
}

// writeFiles creates the files (name → content) in a new folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

func TestLoadText(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"b.txt": "beta", "a.txt": "alpha\n", "c.md": "gamma", "sub/d.txt": "delta"})
	j := func(names ...string) []string {
		for i, n := range names {
			names[i] = filepath.Join(dir, n)
		}
		return names
	}
	cases := []struct {
		name  string
		paths []string
		want  string
	}{
		{"one file", j("b.txt"), "beta"},
		{"sorted", j("b.txt", "a.txt"), "alpha\n\nbeta"},
		{"glob", j("*.txt"), "alpha\n\nbeta"},
		{"glob and file", j("*.md", "sub/d.txt"), "gamma\ndelta"},
		{"twice", j("*.txt", "a.txt"), "alpha\n\nbeta"},
	}
	for _, c := range cases {
		got, err := data.LoadText(c.paths)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

func TestLoadTextErrors(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"ok.txt": "fine", "bad.txt": "caf\xe9 au lait", "empty1": "", "empty2": "", "sub/x": "x"})
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []struct {
		name  string
		paths []string
		msg   string
	}{
		{"no paths", nil, "data: LoadText: no paths given"},
		{"missing file", []string{p("ok.txt"), p("nope.txt")}, "data: LoadText: stat " + p("nope.txt") + ": no such file or directory"},
		{"empty pattern", []string{p("*.csv")}, `data: LoadText: pattern "` + p("*.csv") + `" matches no file`},
		{"bad pattern", []string{p("[")}, `data: LoadText: pattern "` + p("[") + `": syntax error in pattern`},
		{"directory", []string{p("s*")}, "data: LoadText: " + p("sub") + " is a directory, expected a text file"},
		{"invalid UTF-8", []string{p("ok.txt"), p("bad.txt")}, "data: LoadText: " + p("bad.txt") + ": invalid UTF-8 at byte offset 3"},
		{"empty", []string{p("empty*")}, "data: LoadText: " + p("empty1") + ", " + p("empty2") + ": no text (every file is empty)"},
	}
	for _, c := range cases {
		_, err := data.LoadText(c.paths)
		assert.EqualError(t, err, c.msg, c.name)
	}
}

func TestTokenWindows(t *testing.T) {
	t.Parallel()
	tokens := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	w, err := data.NewTokenWindows(tokens, 3)
	require.NoError(t, err)
	var ds data.Dataset = w
	assert.Equal(t, 3, ds.Len())
	assert.Equal(t, []int{4}, ds.SampleShape())
	dst := make([]float32, 4)
	for i, want := range [][]float32{{0, 1, 2, 3}, {3, 4, 5, 6}, {6, 7, 8, 9}} {
		assert.Zero(t, ds.Sample(i, dst))
		assert.Equal(t, want, dst, "window %d", i)
	}
	assert.PanicsWithValue(t, "data: TokenWindows.Sample: index 3 out of range [0, 3)", func() { ds.Sample(3, dst) })
	assert.PanicsWithValue(t, "data: TokenWindows.Sample: len(dst) = 3, expected T+1 = 4", func() { ds.Sample(0, dst[:3]) })

	w, err = data.NewTokenWindows(tokens[:9], 4) // 9 tokens: windows 0…4 and 4…8
	require.NoError(t, err)
	assert.Equal(t, 2, w.Len())

	_, err = data.NewTokenWindows(tokens[:3], 3)
	assert.EqualError(t, err, "data: NewTokenWindows: 3 tokens, expected at least T+1 = 4 for one window")
	_, err = data.NewTokenWindows(tokens, 0)
	assert.EqualError(t, err, "data: NewTokenWindows: window length 0, expected > 0")
}

func TestSplitTokens(t *testing.T) {
	t.Parallel()
	tokens := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	cases := []struct {
		f          float64
		train, val []int32
	}{
		{0.1, tokens[:9], tokens[9:]},
		{0.25, tokens[:7], tokens[7:]}, // 2.5 rounds to 3
		{0, tokens, []int32{}},
	}
	for _, c := range cases {
		train, val, err := data.SplitTokens(tokens, c.f)
		require.NoError(t, err)
		assert.Equal(t, c.train, train, "f = %g", c.f)
		assert.Equal(t, c.val, val, "f = %g", c.f)
	}
	train, _, err := data.SplitTokens(tokens, 0.5)
	require.NoError(t, err)
	_ = append(train, 99)
	assert.Equal(t, int32(5), tokens[5], "appending to the training part must not overwrite the validation part")
	for _, f := range []float64{-0.1, 1, math.NaN()} {
		_, _, err := data.SplitTokens(tokens, f)
		assert.ErrorContains(t, err, "expected a value in [0, 1)")
	}
}

func TestUnigramEntropy(t *testing.T) {
	t.Parallel()
	assert.InDelta(t, math.Log(4), data.UnigramEntropy([]int32{0, 1, 2, 3, 3, 2, 1, 0}, 5), 1e-12)
	assert.Zero(t, data.UnigramEntropy([]int32{2, 2, 2}, 3))
	assert.Zero(t, data.UnigramEntropy(nil, 3))
	p := []float64{0.75, 0.25}
	assert.InDelta(t, -p[0]*math.Log(p[0])-p[1]*math.Log(p[1]), data.UnigramEntropy([]int32{0, 0, 1, 0}, 2), 1e-12)
	assert.PanicsWithValue(t, "data: UnigramEntropy: id 3 at index 1 is out of range [0, 3)", func() { data.UnigramEntropy([]int32{0, 3}, 3) })
}

// ExampleTokenWindows builds a character vocabulary, encodes a text and
// cuts it into windows for next-character prediction.
func ExampleTokenWindows() {
	text := "to be or not to be"
	vocab := data.NewCharVocab(text)
	ids, err := vocab.Encode(text)
	if err != nil {
		log.Fatal(err)
	}
	train, val, err := data.SplitTokens(ids, 0.2)
	if err != nil {
		log.Fatal(err)
	}
	windows, err := data.NewTokenWindows(train, 4)
	if err != nil {
		log.Fatal(err)
	}
	sample := make([]float32, 5)
	windows.Sample(1, sample)
	input, target := make([]int32, 4), make([]int32, 4)
	for i := range 4 {
		input[i], target[i] = int32(sample[i]), int32(sample[i+1])
	}
	fmt.Printf("%d runes %q, %d windows, validation %q\n", vocab.Size(), string(vocab.Runes()), windows.Len(), vocab.Decode(val))
	fmt.Printf("input %q → target %q\n", vocab.Decode(input), vocab.Decode(target))
	fmt.Printf("unigram entropy %.3f nats\n", data.UnigramEntropy(ids, vocab.Size()))
	// Output:
	// 7 runes " benort", 3 windows, validation "o be"
	// input "e or" → target " or "
	// unigram entropy 1.798 nats
}

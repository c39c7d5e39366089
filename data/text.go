package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// CharVocab maps the characters (runes) of a text to token ids 0…Size-1,
// in increasing rune order. Its JSON form is a string of its runes in
// order, so a checkpoint can store it beside the weights.
type CharVocab struct {
	runes []rune
	index map[rune]int32
}

// NewCharVocab returns the vocabulary of the unique runes of text, sorted.
// Bytes of text that are not valid UTF-8 count as U+FFFD, as in a range
// loop over the string.
func NewCharVocab(text string) *CharVocab {
	seen := map[rune]bool{}
	var runes []rune
	for _, r := range text {
		if !seen[r] {
			seen[r] = true
			runes = append(runes, r)
		}
	}
	slices.Sort(runes)
	return newCharVocab(runes)
}

func newCharVocab(runes []rune) *CharVocab {
	v := &CharVocab{runes: runes, index: make(map[rune]int32, len(runes))}
	for i, r := range runes {
		v.index[r] = int32(i)
	}
	return v
}

// Size returns the number of runes, the ids being 0…Size-1.
func (v *CharVocab) Size() int { return len(v.runes) }

// Runes returns a copy of the runes, rune i having id i.
func (v *CharVocab) Runes() []rune { return slices.Clone(v.runes) }

// Encode returns the ids of the runes of s. A rune that is not in the
// vocabulary is an error naming it and its byte offset in s.
func (v *CharVocab) Encode(s string) ([]int32, error) {
	ids := make([]int32, 0, len(s))
	for off, r := range s {
		id, ok := v.index[r]
		if !ok {
			return nil, fmt.Errorf("data: CharVocab.Encode: rune %q (U+%04X) at byte offset %d is not in the vocabulary of %d runes", r, r, off, len(v.runes))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Decode returns the text of the ids; an id outside [0, Size) becomes
// U+FFFD, the replacement character.
func (v *CharVocab) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id < 0 || int(id) >= len(v.runes) {
			b.WriteRune(utf8.RuneError)
			continue
		}
		b.WriteRune(v.runes[id])
	}
	return b.String()
}

// MarshalJSON encodes the vocabulary as a JSON string of its runes in id
// order.
func (v *CharVocab) MarshalJSON() ([]byte, error) { return json.Marshal(string(v.runes)) }

// UnmarshalJSON decodes what MarshalJSON wrote. A string whose runes are
// not strictly increasing (unsorted, repeated) is an error naming the
// position.
func (v *CharVocab) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("data: CharVocab: expected a JSON string of runes: %w", err)
	}
	runes := []rune(s)
	for i := 1; i < len(runes); i++ {
		if runes[i] <= runes[i-1] {
			return fmt.Errorf("data: CharVocab: rune %d (%q) is not after rune %d (%q): expected sorted unique runes", i, runes[i], i-1, runes[i-1])
		}
	}
	*v = *newCharVocab(runes)
	return nil
}

// MaxTextBytes is the most bytes of text LoadText reads, all files
// together: 1 GiB, already 4 GiB of token ids. The sizes of the files are
// checked before they are read.
const MaxTextBytes = 1 << 30

// LoadText reads the text files named by paths, each entry a file name or
// a filepath.Glob pattern, and returns their contents joined with "\n",
// the files in sorted order (a file matched by several entries is read
// once). An entry that matches nothing, a malformed pattern, a file that
// is not a regular file (a directory, a named pipe, a device: refused
// before it is opened), a file that cannot be read or is not valid UTF-8
// (the error names the byte offset), more than MaxTextBytes in all and an
// empty total text are errors naming the path.
func LoadText(paths []string) (string, error) {
	if len(paths) == 0 {
		return "", errors.New("data: LoadText: no paths given")
	}
	var files []string
	for _, p := range paths {
		matches, err := filepath.Glob(p)
		if err != nil {
			return "", fmt.Errorf("data: LoadText: pattern %q: %w", p, err)
		}
		if len(matches) == 0 {
			if !strings.ContainsAny(p, `*?[\`) {
				if _, err := os.Stat(p); err != nil { // say why the file is missing
					return "", fmt.Errorf("data: LoadText: %w", err)
				}
			}
			return "", fmt.Errorf("data: LoadText: pattern %q matches no file", p)
		}
		files = append(files, matches...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	parts := make([]string, len(files))
	total := int64(0)
	for _, f := range files {
		info, err := statRegular(f, "a text file")
		if err != nil {
			return "", fmt.Errorf("data: LoadText: %w", err)
		}
		if total += info.Size(); total > MaxTextBytes {
			return "", fmt.Errorf("data: LoadText: %s: the files hold %d bytes up to this one, more than the limit of %d bytes of text (MaxTextBytes)", f, total, MaxTextBytes)
		}
	}
	total = 0
	for i, f := range files {
		b, err := readRegular(f, "a text file", MaxTextBytes-total)
		if err != nil {
			return "", fmt.Errorf("data: LoadText: %w", err)
		}
		if !utf8.Valid(b) {
			return "", fmt.Errorf("data: LoadText: %s: invalid UTF-8 at byte offset %d", f, invalidUTF8At(b))
		}
		parts[i] = string(b)
		total += int64(len(b))
	}
	if total == 0 {
		return "", fmt.Errorf("data: LoadText: %s: no text (every file is empty)", strings.Join(files, ", "))
	}
	return strings.Join(parts, "\n"), nil
}

// invalidUTF8At returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for off := 0; off < len(b); {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			return off
		}
		off += n
	}
	return len(b)
}

// TokenWindows is the Dataset of consecutive windows of a token sequence
// for next-token prediction: sample i holds the T+1 ids
// tokens[i·T : i·T+T+1], so that its first T ids are a model's input and
// its last T ids the targets, and windows overlap by one id. The ids are
// written as float32 (exact below 2²⁴); the label is always 0.
type TokenWindows struct {
	tokens []int32
	t      int
	shape  []int
}

// NewTokenWindows returns the windows of length T over tokens (not
// copied). T must be positive and tokens must hold at least T+1 ids.
func NewTokenWindows(tokens []int32, T int) (*TokenWindows, error) {
	if T <= 0 {
		return nil, fmt.Errorf("data: NewTokenWindows: window length %d, expected > 0", T)
	}
	if len(tokens) < T+1 {
		return nil, fmt.Errorf("data: NewTokenWindows: %d tokens, expected at least T+1 = %d for one window", len(tokens), T+1)
	}
	return &TokenWindows{tokens: tokens, t: T, shape: []int{T + 1}}, nil
}

// Len returns the number of whole windows, (len(tokens)-1)/T.
func (w *TokenWindows) Len() int { return (len(w.tokens) - 1) / w.t }

// SampleShape returns [T+1].
func (w *TokenWindows) SampleShape() []int { return w.shape }

// Sample writes the ids of window i into dst (T+1 values) and returns 0.
func (w *TokenWindows) Sample(i int, dst []float32) int64 {
	if i < 0 || i >= w.Len() {
		panic(fmt.Sprintf("data: TokenWindows.Sample: index %d out of range [0, %d)", i, w.Len()))
	}
	if len(dst) != w.t+1 {
		panic(fmt.Sprintf("data: TokenWindows.Sample: len(dst) = %d, expected T+1 = %d", len(dst), w.t+1))
	}
	for j, id := range w.tokens[i*w.t : i*w.t+w.t+1] {
		dst[j] = float32(id)
	}
	return 0
}

// SplitTokens returns the first 1-valFraction of tokens for training and
// the last valFraction (rounded to whole tokens) for validation, both
// views of tokens. valFraction must be in [0, 1).
func SplitTokens(tokens []int32, valFraction float64) (train, val []int32, err error) {
	if !(valFraction >= 0 && valFraction < 1) {
		return nil, nil, fmt.Errorf("data: SplitTokens: validation fraction %g, expected a value in [0, 1)", valFraction)
	}
	cut := len(tokens) - int(math.Round(valFraction*float64(len(tokens))))
	return tokens[:cut:cut], tokens[cut:], nil
}

// UnigramEntropy returns the entropy in nats, −Σ p log p, of the
// frequencies of the ids in tokens: the loss per token of the best model
// that ignores context, the baseline a language model must beat. It is 0
// for no tokens. An id outside [0, vocab) panics.
func UnigramEntropy(tokens []int32, vocab int) float64 {
	counts := make([]int, vocab)
	for i, id := range tokens {
		if id < 0 || int(id) >= vocab {
			panic(fmt.Sprintf("data: UnigramEntropy: id %d at index %d is out of range [0, %d)", id, i, vocab))
		}
		counts[id]++
	}
	h, n := 0.0, float64(len(tokens))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log(p)
		}
	}
	return h
}

package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hora-dl/hora/device"
)

// metadataKey is the reserved header key that holds the string metadata.
const metadataKey = "__metadata__"

// maxHeaderLen bounds the JSON header, as the reference implementation does
// (100 MB), so a corrupt length cannot make Load allocate without limit.
const maxHeaderLen = 100_000_000

// ErrFormat is matched (with errors.Is) by every error that reports a
// malformed safetensors file, as opposed to an I/O error.
var ErrFormat = errors.New("checkpoint: malformed safetensors file")

// ErrMismatch is matched (with errors.Is) by LoadInto's error when the file
// lacks a destination tensor, holds it with another shape or dtype, or
// holds a tensor that is not a destination tensor.
var ErrMismatch = errors.New("checkpoint: checkpoint does not match the destination tensors")

// kindError is an error with a fixed message that matches a sentinel.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// formatErr returns an ErrFormat error "path: message".
func formatErr(path, format string, args ...any) error {
	return &kindError{msg: path + ": " + fmt.Sprintf(format, args...), kind: ErrFormat}
}

// dtypeName returns the safetensors name of dt ("F32"), or "" when Hora
// cannot store dt.
func dtypeName(dt device.DType) string {
	switch dt {
	case device.Float32:
		return "F32"
	case device.Float64:
		return "F64"
	case device.Int64:
		return "I64"
	}
	return ""
}

// parseDType maps a safetensors dtype name to a device.DType.
func parseDType(s string) (device.DType, bool) {
	switch s {
	case "F32":
		return device.Float32, true
	case "F64":
		return device.Float64, true
	case "I64":
		return device.Int64, true
	}
	return 0, false
}

// isReferenceDType reports whether s is a dtype the safetensors
// specification defines (so the error can say "not supported" rather than
// "unknown").
func isReferenceDType(s string) bool {
	switch s {
	case "BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "U64",
		"F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64":
		return true
	}
	return false
}

// entry is one tensor's header record, validated.
type entry struct {
	name       string
	dtype      device.DType
	shape      []int
	n          int   // number of elements
	begin, end int64 // data_offsets, relative to the data section
}

// appendJSONString appends s as a JSON string literal. HTML characters are
// kept as they are (the reference writer does not escape them).
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// encodeHeader returns the header bytes for entries (already in file order,
// offsets filled in) and metadata: compact JSON with the metadata first and
// its keys sorted, padded with spaces to a multiple of 8 bytes.
func encodeHeader(entries []entry, metadata map[string]string) []byte {
	b := []byte{'{'}
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = appendJSONString(b, metadataKey)
		b = append(b, ":{"...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, metadata[k])
		}
		b = append(b, '}')
	}
	for i, e := range entries {
		if i > 0 || len(metadata) > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.name)
		b = append(b, `:{"dtype":"`...)
		b = append(b, dtypeName(e.dtype)...)
		b = append(b, `","shape":[`...)
		for j, d := range e.shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, `],"data_offsets":[`...)
		b = strconv.AppendInt(b, e.begin, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, e.end, 10)
		b = append(b, "]}"...)
	}
	b = append(b, '}')
	for len(b)%8 != 0 {
		b = append(b, ' ')
	}
	return b
}

// headerParser walks the header JSON with a token decoder, which (unlike
// unmarshaling into a map) sees duplicate keys.
type headerParser struct {
	path string
	dec  *json.Decoder
}

// jsonErr turns a decoder error into an ErrFormat error naming the place.
func (p *headerParser) jsonErr(where string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("unexpected end of JSON input")
	}
	return formatErr(p.path, "header is not valid JSON: %s%v (at byte %d of the header)", where, err, p.dec.InputOffset())
}

// describe names a JSON token for an error message.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// object reads one JSON object whose opening token has been read, calling
// field for each key (which must read the key's value) and rejecting
// duplicate keys; what names the object in errors.
func (p *headerParser) object(what string, field func(key string) error) error {
	seen := make(map[string]bool)
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return p.jsonErr(what, err)
		}
		key, ok := tok.(string)
		if !ok { // the decoder reports this itself; kept as a guard
			return formatErr(p.path, "%sexpected a key, found %s", what, describe(tok))
		}
		if seen[key] {
			if what == "" && key != metadataKey {
				return formatErr(p.path, "duplicate tensor name %q in header", key)
			}
			return formatErr(p.path, "%sduplicate key %q", what, key)
		}
		seen[key] = true
		if err := field(key); err != nil {
			return err
		}
	}
	if _, err := p.dec.Token(); err != nil { // the closing '}'
		return p.jsonErr(what, err)
	}
	return nil
}

// token reads the next JSON token: a scalar, or the opening delimiter of
// an array or object whose contents the caller then reads.
func (p *headerParser) token(what string) (json.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.jsonErr(what, err)
	}
	return tok, nil
}

// uints reads a JSON array of non-negative integers (each at most limit).
func (p *headerParser) uints(what, field string, limit uint64) ([]uint64, error) {
	tok, err := p.token(what)
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, formatErr(p.path, "%s%q must be an array of non-negative integers, found %s", what, field, describe(tok))
	}
	var out []uint64
	for p.dec.More() {
		tok, err := p.token(what)
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, formatErr(p.path, "%s%q[%d] must be a non-negative integer, found %s", what, field, len(out), describe(tok))
		}
		v, err := strconv.ParseUint(num.String(), 10, 64)
		if err != nil || v > limit {
			return nil, formatErr(p.path, "%s%q[%d] = %s is not an integer in [0, %d]", what, field, len(out), num, limit)
		}
		out = append(out, v)
	}
	if _, err := p.token(what); err != nil { // the closing ']'
		return nil, err
	}
	return out, nil
}

// tensorInfo reads one tensor's {"dtype", "shape", "data_offsets"} object.
func (p *headerParser) tensorInfo(name string, dataLen int64) (entry, error) {
	what := fmt.Sprintf("tensor %q: ", name)
	e := entry{name: name}
	if name == "" {
		return e, formatErr(p.path, "empty tensor name in header")
	}
	if tok, err := p.token(what); err != nil {
		return e, err
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return e, formatErr(p.path, "%sexpected an object with dtype, shape and data_offsets, found %s", what, describe(tok))
	}
	var dtype string
	var shape, offsets []uint64
	var haveDType, haveShape, haveOffsets bool
	err := p.object(what, func(key string) error {
		var err error
		switch key {
		case "dtype":
			haveDType = true
			var tok json.Token
			if tok, err = p.token(what); err != nil {
				return err
			}
			s, ok := tok.(string)
			if !ok {
				return formatErr(p.path, "%s\"dtype\" must be a string, found %s", what, describe(tok))
			}
			dtype = s
		case "shape":
			haveShape = true
			shape, err = p.uints(what, "shape", math.MaxInt)
		case "data_offsets":
			haveOffsets = true
			offsets, err = p.uints(what, "data_offsets", math.MaxInt64)
		default:
			return formatErr(p.path, "%sunknown field %q (expected dtype, shape and data_offsets)", what, key)
		}
		return err
	})
	if err != nil {
		return e, err
	}
	switch {
	case !haveDType:
		return e, formatErr(p.path, "%smissing \"dtype\"", what)
	case !haveShape:
		return e, formatErr(p.path, "%smissing \"shape\"", what)
	case !haveOffsets:
		return e, formatErr(p.path, "%smissing \"data_offsets\"", what)
	case len(offsets) != 2:
		return e, formatErr(p.path, "%s\"data_offsets\" must hold 2 integers [begin, end], found %d", what, len(offsets))
	}
	dt, ok := parseDType(dtype)
	if !ok {
		if isReferenceDType(dtype) {
			return e, formatErr(p.path, "%sdtype %q is not supported (supported: F32, F64, I64)", what, dtype)
		}
		return e, formatErr(p.path, "%sunknown dtype %q (supported: F32, F64, I64)", what, dtype)
	}
	e.dtype = dt
	e.shape = make([]int, len(shape))
	for i, d := range shape {
		e.shape[i] = int(d) // d <= MaxInt, checked by uints
	}
	e.begin, e.end = int64(offsets[0]), int64(offsets[1])

	// The number of elements and bytes, with overflow checks. The product
	// of the non-zero dimensions must fit even when a zero dimension makes
	// the tensor empty, so that strides computed from the shape cannot
	// overflow either.
	n, overflow, empty := uint64(1), false, false
	for _, d := range shape {
		if d == 0 {
			empty = true
			continue
		}
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > math.MaxInt64 {
			overflow = true
		}
		n = lo
	}
	hi, nbytes := bits.Mul64(n, uint64(dt.Size()))
	if overflow || hi != 0 || nbytes > math.MaxInt64 {
		return e, formatErr(p.path, "%sshape %v of %s is too large", what, e.shape, dtype)
	}
	if empty {
		n, nbytes = 0, 0
	}
	e.n = int(n)
	if e.begin > e.end {
		return e, formatErr(p.path, "%sdata_offsets [%d, %d] are reversed (begin > end)", what, e.begin, e.end)
	}
	if span := e.end - e.begin; uint64(span) != nbytes {
		return e, formatErr(p.path, "%sshape %v of %s needs %d bytes, but data_offsets [%d, %d] span %d bytes",
			what, e.shape, dtype, nbytes, e.begin, e.end, span)
	}
	if e.end > dataLen {
		return e, formatErr(p.path, "%sdata_offsets [%d, %d] run past the end of the %d-byte data section",
			what, e.begin, e.end, dataLen)
	}
	return e, nil
}

// metadata reads the "__metadata__" value: null or an object of strings.
func (p *headerParser) metadata(meta map[string]string) error {
	what := metadataKey + ": "
	tok, err := p.token(what)
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return formatErr(p.path, "%smust be an object of strings, found %s", what, describe(tok))
	}
	return p.object(what, func(key string) error {
		tok, err := p.token(what)
		if err != nil {
			return err
		}
		s, ok := tok.(string)
		if !ok {
			return formatErr(p.path, "%svalue of %q must be a string, found %s", what, key, describe(tok))
		}
		meta[key] = s
		return nil
	})
}

// parseHeader validates a header against a data section of dataLen bytes
// and returns the tensors sorted by offset, and the metadata (never nil).
func parseHeader(path string, hdr []byte, dataLen int64) ([]entry, map[string]string, error) {
	if !utf8.Valid(hdr) {
		return nil, nil, formatErr(path, "header is not valid UTF-8")
	}
	p := &headerParser{path: path, dec: json.NewDecoder(bytes.NewReader(hdr))}
	p.dec.UseNumber()
	tok, err := p.token("")
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, formatErr(path, "header must be a JSON object, found %s", describe(tok))
	}
	meta := make(map[string]string)
	var entries []entry
	err = p.object("", func(key string) error {
		if key == metadataKey {
			return p.metadata(meta)
		}
		e, err := p.tensorInfo(key, dataLen)
		entries = append(entries, e)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if rest := hdr[p.dec.InputOffset():]; len(strings.Trim(string(rest), " \t\r\n")) != 0 {
		return nil, nil, formatErr(path, "header has data after its JSON object, at byte %d of the header (only space padding is allowed)",
			p.dec.InputOffset())
	}

	// The data section must be tiled exactly: sorted by offset, each tensor
	// begins where the previous one ended and the last ends at dataLen.
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		if a.end != b.end {
			return a.end < b.end
		}
		return a.name < b.name
	})
	var pos int64
	for i, e := range entries {
		switch {
		case e.begin < pos:
			prev := entries[i-1]
			return nil, nil, formatErr(path, "tensor %q: data_offsets [%d, %d] overlap tensor %q at [%d, %d]",
				e.name, e.begin, e.end, prev.name, prev.begin, prev.end)
		case e.begin > pos && i == 0:
			return nil, nil, formatErr(path, "tensor %q: data begins at byte %d, expected 0 (a gap at the start of the data section)",
				e.name, e.begin)
		case e.begin > pos:
			return nil, nil, formatErr(path, "tensor %q: data begins at byte %d, expected %d (a gap after tensor %q)",
				e.name, e.begin, pos, entries[i-1].name)
		}
		pos = e.end
	}
	if pos != dataLen {
		return nil, nil, formatErr(path, "data section is %d bytes but the tensors cover %d (%s of trailing data)",
			dataLen, pos, plural(dataLen-pos, "byte"))
	}
	return entries, meta, nil
}

// plural formats "1 byte", "2 bytes".
func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

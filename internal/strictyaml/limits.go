package strictyaml

import (
	"fmt"
	"io"

	"github.com/goccy/go-yaml/token"

	"github.com/hora-dl/hora/internal/filekind"
)

// MaxSize is the largest document, in bytes, that Decode and ApplySet
// read (64 KiB; configuration files are a few KB). It bounds the YAML
// parser's time and memory, which are some hundreds of bytes per byte
// read.
const MaxSize = 64 << 10

// MaxDepth bounds the nesting of a document: the collections (mappings
// and lists, in block or flow style) inside one another, checked on the
// tokens before the YAML parser builds the tree (its time and memory grow
// with the square of the depth), and the values inside one another as
// they are decoded, aliases expanded.
const MaxDepth = 64

// MaxKeys bounds the keys of one block mapping: the YAML parser's memory
// grows with the square of their count.
const MaxKeys = 1000

// MaxAliasNodes bounds the values that the aliases of a document expand
// to, in all, as they are decoded: a few lines of aliases of aliases can
// stand for billions of values (a "billion laughs" bomb).
const MaxAliasNodes = 100_000

// tooLarge says that what ("the file", "the value") is size bytes, more
// than MaxSize.
func tooLarge(what string, size int64) string {
	return fmt.Sprintf("%s is too large: %d bytes, more than the %d (%d KiB) a configuration may hold", what, size, MaxSize, MaxSize>>10)
}

// ReadFile reads the file name for Decode. It refuses a file that is not
// a regular file (a named pipe could keep it waiting, a device such as
// /dev/zero could fill the memory) or that is larger than MaxSize, which
// it never reads past.
func ReadFile(name string) ([]byte, error) {
	f, fi, err := filekind.OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("%s: %s", name, tooLarge("the file", fi.Size()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err == nil && len(data) > MaxSize { // the file grew
		return nil, fmt.Errorf("%s: %s", name, tooLarge("the file", int64(len(data))))
	}
	return data, err
}

// limitError is a document past MaxDepth or MaxKeys, located at the
// token where it was found.
type limitError struct {
	at  *token.Position
	msg string
}

func (e *limitError) Error() string { return e.msg }

// checkLimits checks the tokens of documents against MaxDepth and
// MaxKeys before they are parsed. Block nesting is read from the columns
// of the tokens that start a line, or follow a "- ", "? " or ": " that
// starts one: a token at a column right of the enclosing one opens a
// collection, one at the same column is a sibling, one to the left closes
// collections.
func checkLimits(tokens token.Tokens) error {
	type level struct{ column, keys int }
	var (
		levels []level // the open block collections, innermost last
		flow   int     // the open flow collections ([ and {)
		line   int     // the line of the last token seen
		nested bool    // the last token was a "- ", "? " or ": " that starts a line
	)
	for _, tk := range tokens {
		if tk == nil || tk.Position == nil || tk.Type == token.CommentType {
			continue
		}
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType, token.DirectiveType:
			levels = levels[:0] // the next document
			continue
		}
		at := tk.Position
		starts := flow == 0 && (at.Line != line || nested)
		line, nested = at.Line, false
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		if starts {
			for len(levels) > 0 && levels[len(levels)-1].column > at.Column {
				levels = levels[:len(levels)-1]
			}
			entry := tk.Type == token.SequenceEntryType || tk.Type == token.MappingKeyType || tk.Type == token.MappingValueType
			if n := len(levels); n > 0 && levels[n-1].column == at.Column {
				if !entry {
					levels[n-1].keys++
					if levels[n-1].keys > MaxKeys {
						return &limitError{at, fmt.Sprintf("more than %d keys in one mapping", MaxKeys)}
					}
				}
			} else {
				levels = append(levels, level{column: at.Column, keys: 1})
			}
			nested = flow == 0 && entry
		}
		if len(levels)+flow > MaxDepth {
			return &limitError{at, fmt.Sprintf("values nested more than %d deep", MaxDepth)}
		}
	}
	return nil
}

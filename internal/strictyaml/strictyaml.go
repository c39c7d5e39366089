package strictyaml

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Origin says where a key's value came from: a position in the file, or
// the -set argument that assigned it.
type Origin struct {
	// Line and Column locate the value in the file (1-based); 0 when
	// unknown or when the value came from a -set argument.
	Line, Column int
	// Set is the -set argument ("key=value") that assigned the value, or
	// "" for a value from the file.
	Set string
}

// Origins records, for each dotted key path decoded ("optimizer.lr",
// "schedule.milestones[1]"), where its value came from.
type Origins map[string]Origin

// Where returns the place of key for a message: "file:line:col" for a
// value read from file, file otherwise, followed by the -set argument that
// assigned it (" (from -set k=v)") or, when origins is not nil and the key
// was never decoded, " (the key is not set)" — as suffix.
func (o Origins) Where(file, key string) (place, suffix string) {
	place = file
	if place == "" {
		place = "config"
	}
	origin, known := o[key]
	switch {
	case known && origin.Set != "":
		suffix = " (from -set " + origin.Set + ")"
	case known && origin.Line > 0:
		place = fmt.Sprintf("%s:%d:%d", place, origin.Line, origin.Column)
	case !known && o != nil:
		suffix = " (the key is not set)"
	}
	return place, suffix
}

// Decode decodes the YAML document data (read from the file name, which
// errors name) into the struct that ptr points to, strictly: an unknown
// key, a value of the wrong type or out of range, a duplicate key or a
// YAML syntax error is an error of one line that starts with
// "name:line:column: ". Keys the document leaves out keep their values in
// *ptr, so that *ptr can hold the defaults. origins, when not nil, is
// filled with the position of every key decoded.
func Decode(name string, data []byte, ptr any, origins Origins) error {
	v, err := structPointer(ptr)
	if err != nil {
		return err
	}
	body, err := parseDocument(name, data, v.Type())
	if err != nil {
		return err
	}
	d := &decoder{file: name, origins: origins, anchors: map[string]ast.Node{}}
	return d.decode(body, v, "", nil)
}

// ApplySet applies one command-line override, set = "dotted.key=value"
// with the value written in YAML ("train.epochs=3",
// "model.hidden=[256,128]"), to the struct that ptr points to, as
// strictly as Decode. Its errors start with "-set dotted.key=value: ".
// file names the configuration file, for values decoded later from a
// Raw. A key below a Raw field is kept in the Raw, applied when it is
// decoded.
func ApplySet(file string, ptr any, set string, origins Origins) error {
	v, err := structPointer(ptr)
	if err != nil {
		return err
	}
	key, value, ok := strings.Cut(set, "=")
	if !ok {
		return fmt.Errorf("-set %s: expected key=value (e.g. train.epochs=3), found no \"=\"", set)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return fmt.Errorf("-set %s: expected key=value, found an empty key", set)
	}
	parts := strings.Split(key, ".")
	for _, part := range parts {
		if part == "" {
			return fmt.Errorf("-set %s: malformed key %q (expected dotted names such as train.epochs)", set, key)
		}
	}
	node, err := parseSetValue(set, key, value)
	if err != nil {
		return err
	}
	d := &decoder{file: file, set: set, origins: origins, anchors: map[string]ast.Node{}}
	return d.decodeAt(node, v, parts, "")
}

// decodeAt walks v by the keys in parts, then decodes n there. A Raw on
// the way keeps the rest of the walk for when it is decoded.
func (d *decoder) decodeAt(n ast.Node, v reflect.Value, parts []string, path string) error {
	for i, part := range parts {
		if v.Type() == rawType {
			r := v.Addr().Interface().(*Raw)
			r.sets = append(r.sets, rawSet{parts: parts[i:], node: n, set: d.set})
			return nil
		}
		if v.Kind() != reflect.Struct {
			return d.errorf(nil, "%s is %s, not a section with keys", path, expectedOf(v.Type()))
		}
		idx, ok := fieldIndex(v.Type(), part)
		if !ok {
			return d.errorf(nil, "%s", unknownKeyMessage(v.Type(), part, path))
		}
		v = v.Field(idx)
		path = JoinPath(path, part)
	}
	return d.decode(n, v, path, nil)
}

// parseSetValue parses the value of a -set argument as one YAML value.
func parseSetValue(set, key, value string) (ast.Node, error) {
	if len(value) > MaxSize {
		return nil, fmt.Errorf("-set %s: %s: %s", set, key, tooLarge("the value", int64(len(value))))
	}
	f, err := parseYAML([]byte(value))
	if err != nil {
		var le *limitError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("-set %s: %s: %s", set, key, le.msg)
		}
		var ye yaml.Error
		if errors.As(err, &ye) {
			return nil, fmt.Errorf("-set %s: %s: invalid YAML value: %s", set, key, ye.GetMessage())
		}
		return nil, fmt.Errorf("-set %s: %s: invalid YAML value: %s", set, key, firstLine(err.Error()))
	}
	var node ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if node != nil {
			return nil, fmt.Errorf("-set %s: %s: expected one YAML value, found several documents", set, key)
		}
		node = doc.Body
	}
	if node == nil {
		node = &ast.NullNode{}
	}
	return node, nil
}

// structPointer returns the struct ptr points to.
func structPointer(ptr any) (reflect.Value, error) {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("strictyaml: decoding needs a non-nil pointer to a struct, found %T", ptr)
	}
	return v.Elem(), nil
}

// parseDocument parses data as one YAML document and returns its body;
// root is the type it will be decoded into, for the message about an
// empty file.
func parseDocument(name string, data []byte, root reflect.Type) (ast.Node, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: %s", name, tooLarge("the file", int64(len(data))))
	}
	f, err := parseYAML(data)
	if err != nil {
		return nil, yamlError(name, err)
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 1 {
		if _, null := docs[0].Body.(*ast.NullNode); null {
			docs = nil
		}
	}
	switch {
	case len(docs) == 0:
		return nil, fmt.Errorf("%s: the file is empty (expected a mapping with keys %s)",
			name, strings.Join(structKeys(root), ", "))
	case len(docs) > 1:
		p := nodePos(docs[1].Body, nil)
		if p == nil {
			return nil, fmt.Errorf("%s: expected one YAML document, found %d", name, len(docs))
		}
		return nil, fmt.Errorf("%s:%d:%d: expected one YAML document, found %d", name, p.Line, p.Column, len(docs))
	}
	return docs[0].Body, nil
}

// record notes where the value of path came from.
func (d *decoder) record(path string, at *token.Position) {
	if d.origins == nil {
		return
	}
	switch {
	case d.set != "":
		d.origins[path] = Origin{Set: d.set}
	case at != nil:
		d.origins[path] = Origin{Line: at.Line, Column: at.Column}
	default:
		d.origins[path] = Origin{}
	}
}

// parseYAML runs the YAML parser on data, once its tokens are found
// within MaxDepth and MaxKeys (a *limitError otherwise), turning a panic
// inside the parser into an error so that no input can crash the
// command. The caller checks MaxSize.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("invalid YAML (the parser failed: %v)", r)
		}
	}()
	tokens := lexer.Tokenize(string(data))
	if err := checkLimits(tokens); err != nil {
		return nil, err
	}
	return parser.Parse(tokens, 0)
}

// yamlError makes a one-line error out of an error of the YAML parser.
func yamlError(name string, err error) error {
	var le *limitError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d:%d: %s", name, le.at.Line, le.at.Column, le.msg)
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return fmt.Errorf("%s:%d:%d: invalid YAML: %s", name, tk.Position.Line, tk.Position.Column, msg)
		}
		return fmt.Errorf("%s: invalid YAML: %s", name, msg)
	}
	return fmt.Errorf("%s: %s", name, firstLine(err.Error()))
}

// decoder decodes YAML nodes into Go structs strictly, walking the
// structs by their yaml tags.
type decoder struct {
	file    string              // the configuration file
	set     string              // the -set argument being applied, or "" for the file
	origins Origins             // filled with the keys decoded
	anchors map[string]ast.Node // anchors seen so far
	depth   int                 // the values being decoded, one inside the other

	// alias is the outermost alias being expanded, nil outside one;
	// expanded counts the values visited inside aliases, in all, against
	// MaxAliasNodes.
	alias    *ast.AliasNode
	expanded int
}

// errorf returns an error located at pos in the file, or in the -set
// argument being applied.
func (d *decoder) errorf(pos *token.Position, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	switch {
	case d.set != "":
		return fmt.Errorf("-set %s: %s", d.set, msg)
	case pos != nil:
		return fmt.Errorf("%s:%d:%d: %s", d.file, pos.Line, pos.Column, msg)
	default:
		return fmt.Errorf("%s: %s", d.file, msg)
	}
}

// typeError reports a value of the wrong type for the key at path.
func (d *decoder) typeError(n ast.Node, at *token.Position, path string, t reflect.Type, extra string) error {
	return d.errorf(at, "%s: expected %s, found %s%s", displayPath(path), expectedOf(t), describeNode(n), extra)
}

// unwrap resolves anchors, aliases and tags around n; alias is the first
// alias it followed, or nil.
func (d *decoder) unwrap(n ast.Node, at *token.Position) (_ ast.Node, alias *ast.AliasNode, _ error) {
	for range MaxDepth {
		switch m := n.(type) {
		case *ast.AnchorNode:
			if m.Name != nil && m.Name.GetToken() != nil {
				d.anchors[m.Name.GetToken().Value] = m.Value
			}
			n = m.Value
		case *ast.AliasNode:
			name := aliasName(m)
			target, ok := d.anchors[name]
			if !ok {
				return nil, nil, d.errorf(nodePos(m, at), "unknown alias *%s (no anchor &%s before it)", name, name)
			}
			if alias == nil {
				alias = m
			}
			n = target
		case *ast.TagNode:
			n = m.Value
		case *ast.MappingKeyNode:
			n = m.Value
		default:
			return n, alias, nil
		}
		if n == nil {
			return &ast.NullNode{}, alias, nil
		}
	}
	return nil, nil, d.errorf(at, "anchors and aliases nested too deeply")
}

// aliasName returns the name of the anchor alias a refers to.
func aliasName(a *ast.AliasNode) string {
	if a.Value == nil || a.Value.GetToken() == nil {
		return ""
	}
	return a.Value.GetToken().Value
}

// enter starts the visit of the value n at key path (at is the position
// to report when n has none): it resolves n's anchor, alias and tag, and
// checks the value against MaxDepth and, inside an alias, MaxAliasNodes.
// The caller restores d.depth and d.alias when the visit ends.
func (d *decoder) enter(n ast.Node, path string, at *token.Position) (ast.Node, *token.Position, error) {
	d.depth++
	if d.depth > MaxDepth {
		return nil, nil, d.errorf(at, "%s: value nested more than %d deep", displayPath(path), MaxDepth)
	}
	if n == nil {
		n = &ast.NullNode{}
	}
	n, alias, err := d.unwrap(n, at)
	if err != nil {
		return nil, nil, err
	}
	if d.alias == nil {
		d.alias = alias
	}
	if d.alias != nil {
		d.expanded++
		if d.expanded > MaxAliasNodes {
			return nil, nil, d.errorf(nodePos(d.alias, at), "alias *%s: the aliases expand to more than %d values (aliases of aliases?)",
				aliasName(d.alias), MaxAliasNodes)
		}
	}
	return n, nodePos(n, at), nil
}

// walk visits the value n, found at key path, as decode would, without
// storing it: it checks n against the limits of enter.
func (d *decoder) walk(n ast.Node, path string, at *token.Position) error {
	depth, alias := d.depth, d.alias
	defer func() { d.depth, d.alias = depth, alias }()
	n, at, err := d.enter(n, path, at)
	if err != nil {
		return err
	}
	var children []ast.Node
	switch m := n.(type) {
	case *ast.MappingNode:
		for _, p := range m.Values {
			if p != nil {
				children = append(children, p.Key, p.Value)
			}
		}
	case *ast.MappingValueNode:
		children = []ast.Node{m.Key, m.Value}
	case *ast.SequenceNode:
		children = m.Values
	}
	for _, c := range children {
		if err := d.walk(c, path, at); err != nil {
			return err
		}
	}
	return nil
}

// decode stores the YAML node n into v, the value at key path; at is the
// position to report when n has none.
func (d *decoder) decode(n ast.Node, v reflect.Value, path string, at *token.Position) error {
	depth, alias := d.depth, d.alias
	defer func() { d.depth, d.alias = depth, alias }()
	n, at, err := d.enter(n, path, at)
	if err != nil {
		return err
	}
	d.record(path, at)
	if v.Type() == rawType {
		v.Addr().Interface().(*Raw).capture(d, n, at)
		return nil
	}

	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v, path, at)
	case reflect.Slice:
		if _, null := n.(*ast.NullNode); null {
			v.Set(reflect.Zero(v.Type())) // an empty list
			return nil
		}
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return d.typeError(n, at, path, v.Type(), "")
		}
		s := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
		for i, e := range seq.Values {
			if err := d.decode(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i), at); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Array:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return d.typeError(n, at, path, v.Type(), "")
		}
		if len(seq.Values) != v.Len() {
			return d.errorf(at, "%s: expected %s, found a list of %d", displayPath(path), expectedOf(v.Type()), len(seq.Values))
		}
		for i, e := range seq.Values {
			if err := d.decode(e, v.Index(i), fmt.Sprintf("%s[%d]", path, i), at); err != nil {
				return err
			}
		}
		return nil
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return d.typeError(n, at, path, v.Type(), "")
		}
		v.SetBool(b.Value)
		return nil
	case reflect.String:
		switch s := n.(type) {
		case *ast.StringNode:
			v.SetString(s.Value)
		case *ast.LiteralNode:
			if s.Value != nil {
				v.SetString(s.Value.Value)
			}
		case *ast.IntegerNode, *ast.FloatNode:
			v.SetString(n.GetToken().Value)
		default:
			return d.typeError(n, at, path, v.Type(), "")
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, outOfRange, ok := intValue(n)
		if ok && !outOfRange && v.OverflowInt(i) {
			outOfRange = true
		}
		if !ok {
			return d.typeError(n, at, path, v.Type(), "")
		}
		if outOfRange {
			return d.typeError(n, at, path, v.Type(), " (out of range)")
		}
		v.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, outOfRange, ok := uintValue(n)
		if ok && !outOfRange && v.OverflowUint(u) {
			outOfRange = true
		}
		if !ok {
			return d.typeError(n, at, path, v.Type(), "")
		}
		if outOfRange {
			return d.typeError(n, at, path, v.Type(), " (out of range)")
		}
		v.SetUint(u)
		return nil
	case reflect.Float32, reflect.Float64:
		f, ok := floatValue(n)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) || v.OverflowFloat(f) {
			return d.typeError(n, at, path, v.Type(), "")
		}
		v.SetFloat(f)
		return nil
	}
	// A field of a kind the decoder does not handle (map, pointer, ...).
	return d.errorf(at, "%s: cannot decode into a Go %s", displayPath(path), v.Type())
}

// decodeStruct decodes a mapping into the struct v (a section), key by key;
// keys left out keep their values. An empty value leaves the section as it
// is.
func (d *decoder) decodeStruct(n ast.Node, v reflect.Value, path string, at *token.Position) error {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.NullNode:
		return nil
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return d.typeError(n, at, path, v.Type(), "")
	}
	seen := map[string]*token.Position{}
	for _, p := range pairs {
		if p == nil {
			continue
		}
		keyAt := nodePos(p.Key, at)
		key, err := d.keyName(p.Key, keyAt, path)
		if err != nil {
			return err
		}
		if first, dup := seen[key]; dup {
			if first != nil {
				return d.errorf(keyAt, "duplicate key %q %s (first at line %d)", key, sectionName(path), first.Line)
			}
			return d.errorf(keyAt, "duplicate key %q %s", key, sectionName(path))
		}
		seen[key] = keyAt
		i, ok := fieldIndex(v.Type(), key)
		if !ok {
			return d.errorf(keyAt, "%s", unknownKeyMessage(v.Type(), key, path))
		}
		if err := d.decode(p.Value, v.Field(i), JoinPath(path, key), keyAt); err != nil {
			return err
		}
	}
	return nil
}

// keyName returns the text of a mapping key.
func (d *decoder) keyName(k ast.Node, at *token.Position, path string) (string, error) {
	if k == nil {
		return "", d.errorf(at, "expected a key name %s, found an empty key", sectionName(path))
	}
	n, _, err := d.unwrap(k, at)
	if err != nil {
		return "", err
	}
	switch s := n.(type) {
	case *ast.StringNode:
		return s.Value, nil
	case *ast.MergeKeyNode:
		return "", d.errorf(at, "merge keys (<<) are not supported %s", sectionName(path))
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, nil
	}
	return "", d.errorf(at, "expected a key name %s, found %s", sectionName(path), describeNode(n))
}

// intValue returns the integer held by n. outOfRange reports an integer too
// large for int64; ok is false when n is not an integer.
func intValue(n ast.Node) (i int64, outOfRange, ok bool) {
	switch s := n.(type) {
	case *ast.IntegerNode:
		switch x := s.Value.(type) {
		case int64:
			return x, false, true
		case uint64:
			if x > math.MaxInt64 {
				return 0, true, true
			}
			return int64(x), false, true
		}
	case *ast.StringNode:
		// Integers too large for the YAML parser come out as plain strings.
		if isPlain(s) && isDecimalInt(s.Value) {
			i, err := strconv.ParseInt(s.Value, 10, 64)
			return i, err != nil, true
		}
	}
	return 0, false, false
}

// uintValue is intValue for unsigned integers; a negative number is not ok.
func uintValue(n ast.Node) (u uint64, outOfRange, ok bool) {
	switch s := n.(type) {
	case *ast.IntegerNode:
		switch x := s.Value.(type) {
		case int64:
			if x < 0 {
				return 0, false, false
			}
			return uint64(x), false, true
		case uint64:
			return x, false, true
		}
	case *ast.StringNode:
		if isPlain(s) && isDecimalInt(s.Value) && !strings.HasPrefix(s.Value, "-") {
			u, err := strconv.ParseUint(strings.TrimPrefix(s.Value, "+"), 10, 64)
			return u, err != nil, true
		}
	}
	return 0, false, false
}

// floatValue returns the number held by n. Plain scalars such as 1e-3,
// which the YAML parser leaves as strings, count as numbers.
func floatValue(n ast.Node) (float64, bool) {
	switch s := n.(type) {
	case *ast.IntegerNode:
		switch x := s.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.FloatNode:
		return s.Value, true
	case *ast.StringNode:
		if isPlain(s) && looksNumeric(s.Value) {
			f, err := strconv.ParseFloat(s.Value, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// isPlain reports whether s was written without quotes.
func isPlain(s *ast.StringNode) bool {
	return s.Token != nil && s.Token.Type == token.StringType
}

// isDecimalInt reports whether s is an optionally signed run of digits.
func isDecimalInt(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// looksNumeric reports whether s is written as a decimal number (digits,
// sign, point, exponent), ruling out "inf", "nan" and hexadecimal forms.
func looksNumeric(s string) bool {
	if s == "" {
		return false
	}
	digit := false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r == '+' || r == '-' || r == '.' || r == 'e' || r == 'E':
		default:
			return false
		}
	}
	return digit
}

// nodePos returns the position of n, or fallback when n has none.
func nodePos(n ast.Node, fallback *token.Position) *token.Position {
	if n == nil {
		return fallback
	}
	if rv := reflect.ValueOf(n); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return fallback
	}
	switch m := n.(type) {
	case *ast.MappingNode:
		if len(m.Values) > 0 && m.Values[0] != nil {
			return nodePos(m.Values[0], fallback)
		}
	case *ast.MappingValueNode:
		return nodePos(m.Key, fallback)
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
		return tk.Position
	}
	return fallback
}

// describeNode says what a YAML node holds, for "found ..." in messages.
func describeNode(n ast.Node) string {
	switch s := n.(type) {
	case *ast.NullNode:
		// The parser gives "key:" and "key: null" the same token.
		return "an empty value (null)"
	case *ast.StringNode:
		if isPlain(s) && looksNumeric(s.Value) {
			return shorten(s.Value)
		}
		return quoteValue(s.Value)
	case *ast.LiteralNode:
		if s.Value != nil {
			return quoteValue(s.Value.Value)
		}
		return "a block string"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return fmt.Sprintf("a list of %d", len(s.Values))
	}
	if tk := n.GetToken(); tk != nil && tk.Value != "" {
		return shorten(tk.Value)
	}
	return "a " + strings.ToLower(n.Type().String())
}

// quoteValue quotes s for a message, shortening long values.
func quoteValue(s string) string {
	return strconv.Quote(shorten(s))
}

// shorten shortens s to at most 40 runes.
func shorten(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "..."
	}
	return s
}

// firstLine keeps the first line of a message.
func firstLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return first
}

// expectedOf describes the YAML values a Go type accepts.
func expectedOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list of " + pluralOf(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("a list of %d %s", t.Len(), pluralOf(t.Elem()))
	case reflect.Struct:
		return "a mapping with keys " + strings.Join(structKeys(t), ", ")
	}
	return t.String()
}

// pluralOf names the values of a list element type.
func pluralOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "numbers"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integers"
	case reflect.String:
		return "strings"
	}
	return "values"
}

// structKeys lists the YAML keys of the fields of struct type t, in order.
func structKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if name := FieldKey(t.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

// FieldKey returns the YAML key of a struct field (its yaml tag), or ""
// for a field that has none.
func FieldKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// fieldIndex finds the field of struct type t with the YAML key name.
func fieldIndex(t reflect.Type, name string) (int, bool) {
	for i := range t.NumField() {
		if n := FieldKey(t.Field(i)); n != "" && n == name {
			return i, true
		}
	}
	return 0, false
}

// unknownKeyMessage reports key as unknown in the section at path of type t,
// listing the known keys and the closest one.
func unknownKeyMessage(t reflect.Type, key, path string) string {
	keys := structKeys(t)
	msg := fmt.Sprintf("unknown key %q %s (known: %s)", shorten(key), sectionName(path), strings.Join(keys, ", "))
	best, bestDist := "", 3
	for _, k := range keys {
		if dist := editDistance(strings.ToLower(key), k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return msg
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// sectionName says where a key is: "at the top level" or "in train".
func sectionName(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

// displayPath names the key at path, "the configuration" for the root.
func displayPath(path string) string {
	if path == "" {
		return "the configuration"
	}
	return path
}

// JoinPath appends key to the dotted key path.
func JoinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

package train

import (
	"embed"
	"fmt"
	"github.com/hora-dl/hora/internal/strictyaml"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// configSources holds the Go source declaring Config and its sections: the
// doc comments of their fields are the "meaning" column of the reference.
// A section declared in another file must be added to the pattern.
//
//go:embed config.go
var configSources embed.FS

// ConfigReference returns the Markdown reference of the configuration file:
// a "General" table of the top-level keys, then one table per section
// (data, model, optimizer, ...), each row giving the dotted key, its type,
// its default (from DefaultConfig) and its meaning (the field's doc comment
// in config.go). It fails, naming the field, when a key has no doc comment.
func ConfigReference() (string, error) {
	sources := map[string]string{}
	err := fs.WalkDir(configSources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := configSources.ReadFile(path)
		sources[path] = string(data)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("config reference: reading the embedded sources: %w", err)
	}
	return configReference(reflect.ValueOf(DefaultConfig()).Elem(), sources)
}

// configReference writes the reference of the configuration struct root
// (holding the defaults), taking the fields' doc comments from sources
// (file name → Go source).
func configReference(root reflect.Value, sources map[string]string) (string, error) {
	docs, err := fieldDocs(sources)
	if err != nil {
		return "", err
	}
	r := &refWriter{docs: docs}
	r.b.WriteString("# Configuration reference\n\n")
	r.b.WriteString("The keys of the YAML configuration file read by `train -config FILE`. " +
		"A key the file leaves out takes the default shown here; " +
		"`-set key=value` overrides a key from the command line (`-set optimizer.lr=0.01`).\n")

	// Top-level scalars first, in one "General" table; then the sections.
	t := root.Type()
	var general, sections []int
	for i := range t.NumField() {
		f := t.Field(i)
		if strictyaml.FieldKey(f) == "" {
			continue
		}
		if isSection(f.Type) {
			sections = append(sections, i)
		} else {
			general = append(general, i)
		}
	}
	if len(general) > 0 {
		r.b.WriteString("\n## General\n\n")
		if err := r.table(t, root, general, ""); err != nil {
			return "", err
		}
	}
	for _, i := range sections {
		f := t.Field(i)
		if err := r.section(root.Field(i), t.Name(), f, strictyaml.FieldKey(f), 2); err != nil {
			return "", err
		}
	}
	return r.b.String(), nil
}

// refWriter builds the reference.
type refWriter struct {
	docs map[string]string // "TypeName.FieldName" → doc comment, "TypeName" → ""
	b    strings.Builder
}

// section writes the heading, the doc comment and the table of the struct
// field f of type parent, found at key, then its nested sections one level
// deeper.
func (r *refWriter) section(v reflect.Value, parent string, f reflect.StructField, key string, level int) error {
	doc, err := r.doc(parent, f, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(&r.b, "\n%s %s\n\n%s\n\n", strings.Repeat("#", min(level, 6)), key, escapeMarkdown(doc))

	v, t := deref(v), derefType(f.Type)
	var rows, nested []int
	for i := range t.NumField() {
		sf := t.Field(i)
		if strictyaml.FieldKey(sf) == "" {
			continue
		}
		if isSection(sf.Type) {
			nested = append(nested, i)
		} else {
			rows = append(rows, i)
		}
	}
	if len(rows) > 0 {
		if err := r.table(t, v, rows, key); err != nil {
			return err
		}
	}
	for _, i := range nested {
		sf := t.Field(i)
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		if err := r.section(fv, t.Name(), sf, key+"."+strictyaml.FieldKey(sf), level+1); err != nil {
			return err
		}
	}
	return nil
}

// table writes the rows of the fields at indexes of struct type t, whose
// keys start with prefix, with their defaults from v (of type t, or invalid
// when there are none).
func (r *refWriter) table(t reflect.Type, v reflect.Value, indexes []int, prefix string) error {
	r.b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, i := range indexes {
		f := t.Field(i)
		key := strictyaml.JoinPath(prefix, strictyaml.FieldKey(f))
		doc, err := r.doc(t.Name(), f, key)
		if err != nil {
			return err
		}
		def := "—"
		if v.IsValid() {
			def = defaultOf(v.Field(i), doc)
		}
		fmt.Fprintf(&r.b, "| `%s` | %s | %s | %s |\n", key, typeName(f.Type), def, escapeMarkdown(doc))
	}
	return nil
}

// doc returns the doc comment of field f of the struct type named parent,
// or an error naming the field when it has none.
func (r *refWriter) doc(parent string, f reflect.StructField, key string) (string, error) {
	if _, ok := r.docs[parent]; !ok {
		return "", fmt.Errorf("config reference: type %s (holding key %q) is not declared in the embedded sources: add its file to the go:embed line of configref.go", parent, key)
	}
	doc := r.docs[parent+"."+f.Name]
	if doc == "" {
		return "", fmt.Errorf("config reference: field %s.%s (key %q) has no doc comment: document it in the struct declaration", parent, f.Name, key)
	}
	return doc, nil
}

// fieldDocs maps "TypeName.FieldName" to the doc comment of every field of
// every struct type declared in sources, joined into one line, and the
// name of each of these types to "".
func fieldDocs(sources map[string]string) (map[string]string, error) {
	names := make([]string, 0, len(sources))
	for name := range sources {
		names = append(names, name)
	}
	sort.Strings(names)
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range names {
		file, err := parser.ParseFile(fset, name, sources[name], parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("config reference: parsing %w", err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok {
				return true
			}
			docs[spec.Name.Name] = ""
			for _, field := range st.Fields.List {
				group := field.Doc
				if group == nil {
					group = field.Comment
				}
				text := strings.Join(strings.Fields(group.Text()), " ")
				for _, id := range field.Names {
					docs[spec.Name.Name+"."+id.Name] = text
				}
			}
			return true
		})
	}
	return docs, nil
}

// isSection reports whether a field of type t is a section of keys (a
// struct) rather than one key.
func isSection(t reflect.Type) bool {
	return derefType(t).Kind() == reflect.Struct
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// deref follows pointers; a nil pointer gives the invalid Value.
func deref(v reflect.Value) reflect.Value {
	for v.IsValid() && v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v
}

// typeName names the YAML type of values of Go type t: int, number,
// string, bool, list of int, [2]number.
func typeName(t reflect.Type) string {
	t = derefType(t)
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int ≥ 0"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), typeName(t.Elem()))
	case reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case reflect.Struct:
		return "mapping"
	}
	return t.String()
}

// requiredRE finds a doc comment's "Required." or "Required, > 0." (but not
// "Required by ...", a requirement that depends on another key).
var requiredRE = regexp.MustCompile(`\bRequired[.,;]`)

// defaultOf formats the default value v of a key with the given doc comment
// as a Markdown code span, or "required" / "—" for a zero value the doc
// comment says is required.
func defaultOf(v reflect.Value, doc string) string {
	if v.IsZero() && strings.Contains(doc, "Required") {
		if requiredRE.MatchString(doc) {
			return "required"
		}
		return "—"
	}
	return "`" + yamlValue(v) + "`"
}

// yamlValue writes v as a YAML flow value: 1, 0.001, "cpu", true, [512, 256].
func yamlValue(v reflect.Value) string {
	v = deref(v)
	if !v.IsValid() {
		return "null"
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return formatFloat(v.Float())
	case reflect.Slice, reflect.Array:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = yamlValue(v.Index(i))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case reflect.Map:
		items := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			items = append(items, yamlValue(k)+": "+yamlValue(v.MapIndex(k)))
		}
		sort.Strings(items)
		return "{" + strings.Join(items, ", ") + "}"
	case reflect.Struct:
		items := []string{}
		for i := range v.NumField() {
			if name := strictyaml.FieldKey(v.Type().Field(i)); name != "" {
				items = append(items, name+": "+yamlValue(v.Field(i)))
			}
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// formatFloat writes x the shortest way, with YAML-style exponents: 1e-8
// rather than Go's 1e-08.
func formatFloat(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	mant, exp, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	sign := ""
	if exp[0] == '-' {
		sign = "-"
	}
	return mant + "e" + sign + strings.TrimLeft(exp[1:], "0")
}

// markdownEscaper escapes the characters of a doc comment that Markdown
// would read as table separators, emphasis or HTML tags.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "|", `\|`, "*", `\*`, "<", `\<`)

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }

package strictyaml

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Raw is a YAML value kept as written, for a section whose Go type is
// known only later: a registered model's model.args is decoded into the
// model's own struct once the model is known. Decoding a Raw later is
// as strict as decoding the file, with the same file:line:column errors,
// and -set overrides of keys below it are applied then.
type Raw struct {
	file    string
	node    ast.Node // nil when the file leaves the key out
	at      *token.Position
	set     string // the -set argument that gave node, or ""
	anchors map[string]ast.Node
	sets    []rawSet
	value   any // what DecodeInto last filled, for MarshalYAML
}

// rawSet is a -set override of a key below a Raw.
type rawSet struct {
	parts []string // the keys below the Raw
	node  ast.Node
	set   string
}

var rawType = reflect.TypeFor[Raw]()

// capture stores the node n found at the Raw's key.
func (r *Raw) capture(d *decoder, n ast.Node, at *token.Position) {
	if _, null := n.(*ast.NullNode); null {
		n = nil
	}
	*r = Raw{file: d.file, node: n, at: at, set: d.set, anchors: d.anchors}
}

// IsZero reports whether nothing was given for the Raw's key, neither in
// the file nor by -set.
func (r Raw) IsZero() bool { return r.node == nil && len(r.sets) == 0 }

// DecodeInto decodes the value into the struct that ptr points to, as
// strictly as Decode: keys left out keep the values *ptr holds. path is
// the Raw's dotted key ("model.args"), which messages and origins use.
// After it succeeds, MarshalYAML writes *ptr.
func (r *Raw) DecodeInto(ptr any, path string, origins Origins) error {
	v, err := structPointer(ptr)
	if err != nil {
		return err
	}
	anchors := r.anchors
	if anchors == nil {
		anchors = map[string]ast.Node{}
	}
	if r.node != nil {
		d := &decoder{file: r.file, set: r.set, origins: origins, anchors: anchors}
		if err := d.decode(r.node, v, path, r.at); err != nil {
			return err
		}
	}
	for _, s := range r.sets {
		d := &decoder{file: r.file, set: s.set, origins: origins, anchors: map[string]ast.Node{}}
		if err := d.decodeAt(s.node, v, s.parts, path); err != nil {
			return err
		}
	}
	r.value = v.Interface()
	return nil
}

// MarshalYAML writes the value: the struct DecodeInto filled, or else the
// value as written, aliases expanded (within MaxDepth and MaxAliasNodes).
func (r Raw) MarshalYAML() (any, error) {
	if r.value != nil {
		return r.value, nil
	}
	if r.node == nil {
		return nil, nil
	}
	d := &decoder{file: r.file, set: r.set, anchors: maps.Clone(r.anchors)}
	if d.anchors == nil {
		d.anchors = map[string]ast.Node{}
	}
	if err := d.walk(r.node, "", r.at); err != nil {
		return nil, err
	}
	var v any
	if err := yaml.NodeToValue(r.node, &v); err != nil {
		return nil, fmt.Errorf("strictyaml: %w", err)
	}
	return v, nil
}

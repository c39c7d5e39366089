// Package strictyaml decodes YAML configuration files into Go structs
// strictly, for users who must learn at once what is wrong with their
// file: an unknown key (with the closest known one), a value of the wrong
// type or out of range, a duplicate key, an alias to nothing and a syntax
// error are each an error of one line that starts with
// "file:line:column: " and says what was expected and what was found.
//
// Structs are walked by their yaml tags; the supported field kinds are
// structs (sections), slices, arrays, booleans, strings, integers and
// floats, and Raw, a value decoded later into a type known only then
// (a registered model's own keys). ApplySet applies command-line
// overrides ("-set train.epochs=3") with the same checks, and Origins
// records where each key's value came from, so that later validation
// can point at the line too.
//
// A document is bounded before and while it is decoded, so that no input
// can take the parser's time and memory: its size (MaxSize), its nesting
// (MaxDepth), the keys of one mapping (MaxKeys) and the values its
// aliases expand to (MaxAliasNodes). ReadFile reads a file within these
// bounds.
package strictyaml

package strictyaml

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/fuzzbound"
)

// tree is a recursive type, which aliases of aliases can fill with
// billions of values.
type tree struct {
	Name string `yaml:"name"`
	Kids []tree `yaml:"kids"`
}

// laughs returns a "billion laughs" document of levels anchors, each
// holding width aliases of the one before: it stands for about
// width^levels values.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("kids:\n- &l0 {name: x}\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "- &l%d {kids: [*l%d%s]}\n", i, i-1, strings.Repeat(fmt.Sprintf(", *l%d", i-1), width-1))
	}
	return b.String()
}

func TestDecodeRefusesLargeDocuments(t *testing.T) {
	big := strings.Repeat("# a comment line\n", MaxSize/17+1)
	require.Greater(t, len(big), MaxSize)
	err := Decode("f.yaml", []byte(big), &doc{}, nil)
	require.EqualError(t, err, "f.yaml: the file is too large: 65552 bytes, more than the 65536 (64 KiB) a configuration may hold")

	err = ApplySet("f.yaml", &doc{}, "name="+strings.Repeat("x", MaxSize+1), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ": name: the value is too large: 65537 bytes, more than the 65536")
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	require.NoError(t, os.WriteFile(path, []byte("name: x\n"), 0o600))
	data, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "name: x\n", string(data))

	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, 1<<20), 0o600))
	_, err = ReadFile(big)
	require.EqualError(t, err, big+": the file is too large: 1048576 bytes, more than the 65536 (64 KiB) a configuration may hold")

	_, err = ReadFile(filepath.Join(dir, "absent.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = ReadFile(dir)
	require.EqualError(t, err, dir+" is a directory, not a regular file")
	if _, err := os.Stat(os.DevNull); err == nil && os.DevNull == "/dev/null" {
		_, err = ReadFile(os.DevNull)
		require.EqualError(t, err, "/dev/null is a character device, not a regular file")
	}
}

func TestDecodeRefusesDeepNesting(t *testing.T) {
	deep := MaxDepth + 1
	var block strings.Builder
	for i := range deep {
		block.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	cases := []struct{ name, yaml, want string }{
		{"flow", "name: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n",
			"f.yaml:1:70: values nested more than 64 deep"},
		{"flow mappings", "args: " + strings.Repeat("{a: ", 10000) + "1" + strings.Repeat("}", 10000) + "\n",
			"f.yaml:1:259: values nested more than 64 deep"},
		{"block", block.String(), "f.yaml:65:65: values nested more than 64 deep"},
		{"sequence entries", strings.Repeat("- ", 10000) + "x\n", "f.yaml:1:129: values nested more than 64 deep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := Decode("f.yaml", []byte(c.yaml), &doc{}, nil)
			require.EqualError(t, err, c.want)
			assert.Less(t, time.Since(start), time.Second)
		})
	}

	// At the limit, the document is parsed (and refused for its type).
	n := MaxDepth - 1 // under the key name, itself a level
	err := Decode("f.yaml", []byte("name: "+strings.Repeat("[", n)+strings.Repeat("]", n)+"\n"), &doc{}, nil)
	require.EqualError(t, err, "f.yaml:1:7: name: expected a string, found a list of 1")

	err = ApplySet("f.yaml", &doc{}, "train.sizes="+strings.Repeat("[", 100)+strings.Repeat("]", 100), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ": train.sizes: values nested more than 64 deep")
}

func TestDecodeRefusesTooManyKeys(t *testing.T) {
	mapping := func(keys int) []byte {
		var b strings.Builder
		b.WriteString("args:\n")
		for i := range keys {
			fmt.Fprintf(&b, "  k%d: &a%d [1, 2]\n", i, i)
		}
		return []byte(b.String())
	}
	start := time.Now()
	err := Decode("f.yaml", mapping(MaxKeys+1), &doc{}, nil)
	require.EqualError(t, err, "f.yaml:1002:3: more than 1000 keys in one mapping")
	assert.Less(t, time.Since(start), time.Second)
	require.NoError(t, Decode("f.yaml", mapping(MaxKeys), &doc{}, nil))

	// Lists of any length, and keys spread over mappings, are fine.
	list := "args:\n" + strings.Repeat("- x\n", 2*MaxKeys)
	require.NoError(t, Decode("f.yaml", []byte(list), &doc{}, nil))
	nested := "args:\n" + strings.Repeat("- a: 1\n  b: 2\n", MaxKeys)
	require.NoError(t, Decode("f.yaml", []byte(nested), &doc{}, nil))
}

func TestDecodeBoundsAliasExpansion(t *testing.T) {
	start := time.Now()
	var tr tree
	err := Decode("f.yaml", []byte(laughs(7, 10)), &tr, nil) // a million values
	require.Error(t, err)
	assert.Regexp(t, `^f\.yaml:\d+:\d+: alias \*l\d: the aliases expand to more than 100000 values`, err.Error())
	assert.Less(t, time.Since(start), time.Second)

	// An alias inside its own anchor.
	err = Decode("f.yaml", []byte("kids: &a [{kids: *a}, {kids: *a}]\n"), &tr, nil)
	require.Error(t, err)
	assert.Regexp(t, `^f\.yaml:1:\d+: kids\[0\](\.kids\[0\])+: value nested more than 64 deep$`, err.Error())

	// Aliases within the bound decode.
	require.NoError(t, Decode("f.yaml", []byte(laughs(4, 10)), &tr, nil))
	assert.Len(t, tr.Kids[3].Kids[9].Kids[9].Kids, 10)
}

func TestRawMarshalBoundsAliasExpansion(t *testing.T) {
	var d doc
	require.NoError(t, Decode("f.yaml", []byte("args:\n  "+strings.ReplaceAll(laughs(7, 10), "\n", "\n  ")), &d, nil))
	start := time.Now()
	_, err := yaml.Marshal(d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the aliases expand to more than 100000 values")
	assert.Less(t, time.Since(start), time.Second)
}

// FuzzDecode checks that no document makes Decode, or writing back a Raw
// it kept, panic or take long, and that its errors name the file.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("name: x\ntrain: {rate: 0.1, epochs: 2, sizes: [1, 2]}\nargs: {width: 3}\n"))
	f.Add([]byte("args: &a {b: *a}\n"))
	f.Add([]byte("args:\n  " + strings.ReplaceAll(laughs(9, 10), "\n", "\n  ")))
	f.Add([]byte(strings.Repeat("- ", 200) + "x\n"))
	f.Add([]byte("name: " + strings.Repeat("[", 200) + "\n"))
	f.Add([]byte("args:\n  a: |\n    [[[[\n  b: 'x\n   [[['\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, fuzzbound.PerInput, func() {
			var d doc
			err := Decode("fuzz.yaml", data, &d, nil)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
					t.Fatalf("error does not name the file: %q", err)
				}
				return
			}
			_, _ = yaml.Marshal(d)
		})
	})
}

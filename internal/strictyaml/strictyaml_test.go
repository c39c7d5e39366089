package strictyaml

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type section struct {
	Rate   float64 `yaml:"rate"`
	Epochs int     `yaml:"epochs"`
	Sizes  []int   `yaml:"sizes"`
}

type doc struct {
	Name  string  `yaml:"name"`
	Train section `yaml:"train"`
	Args  Raw     `yaml:"args,omitempty"`
	Flag  bool    `yaml:"flag"`
	Seed  uint8   `yaml:"seed"`
}

type netArgs struct {
	Width  int      `yaml:"width"`
	Layers []string `yaml:"layers"`
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "name: x\ntrain:\n  epoch: 3\n", `f.yaml:3:3: unknown key "epoch" in train (known: rate, epochs, sizes); did you mean "epochs"?`},
		{"wrong type", "train:\n  rate: fast\n", `f.yaml:2:9: train.rate: expected a number, found "fast"`},
		{"list of wrong type", "train:\n  sizes: [1, x]\n", `f.yaml:2:14: train.sizes[1]: expected an integer, found "x"`},
		{"out of range", "seed: 300\n", `f.yaml:1:7: seed: expected a non-negative integer, found 300 (out of range)`},
		{"duplicate", "name: a\nname: b\n", `f.yaml:2:1: invalid YAML: mapping key "name" already defined`},
		{"syntax", "train: [\n", `f.yaml:1:8: invalid YAML`},
		{"empty", "# nothing\n", `f.yaml: the file is empty (expected a mapping with keys name, train, args, flag, seed)`},
		{"two documents", "name: a\n---\nname: b\n", `f.yaml:3:1: expected one YAML document, found 2`},
		{"unknown alias", "name: *nope\n", `f.yaml:1:7: unknown alias *nope`},
		{"section not a mapping", "train: 3\n", `f.yaml:1:8: train: expected a mapping with keys rate, epochs, sizes, found 3`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d doc
			err := Decode("f.yaml", []byte(c.yaml), &d, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestDecodeKeepsDefaultsAndRecordsOrigins(t *testing.T) {
	d := doc{Name: "default", Train: section{Rate: 0.1, Epochs: 5}}
	origins := Origins{}
	require.NoError(t, Decode("f.yaml", []byte("train:\n  epochs: 2\n"), &d, origins))
	assert.Equal(t, "default", d.Name)
	assert.Equal(t, section{Rate: 0.1, Epochs: 2}, d.Train)
	assert.Equal(t, Origin{Line: 2, Column: 11}, origins["train.epochs"])
	place, suffix := origins.Where("f.yaml", "train.epochs")
	assert.Equal(t, "f.yaml:2:11", place)
	assert.Empty(t, suffix)
	_, suffix = origins.Where("f.yaml", "train.rate")
	assert.Equal(t, " (the key is not set)", suffix)
}

func TestApplySet(t *testing.T) {
	var d doc
	origins := Origins{}
	require.NoError(t, ApplySet("f.yaml", &d, "train.sizes=[4, 5]", origins))
	assert.Equal(t, []int{4, 5}, d.Train.Sizes)
	place, suffix := origins.Where("f.yaml", "train.sizes")
	assert.Equal(t, "f.yaml", place)
	assert.Equal(t, " (from -set train.sizes=[4, 5])", suffix)

	for set, want := range map[string]string{
		"train.epochs":       `-set train.epochs: expected key=value`,
		"=3":                 `-set =3: expected key=value, found an empty key`,
		"train..epochs=3":    `malformed key "train..epochs"`,
		"train.epoch=3":      `-set train.epoch=3: unknown key "epoch" in train`,
		"train.epochs.x=3":   `-set train.epochs.x=3: train.epochs is an integer, not a section with keys`,
		"train.epochs=three": `-set train.epochs=three: train.epochs: expected an integer, found "three"`,
		"train.sizes=[1":     `-set train.sizes=[1: train.sizes: invalid YAML value`,
	} {
		err := ApplySet("f.yaml", &d, set, origins)
		require.Error(t, err, set)
		assert.Contains(t, err.Error(), want, set)
	}
	assert.Error(t, ApplySet("f.yaml", d, "name=x", nil), "not a pointer")
}

func TestRawDecodesLaterWithPositions(t *testing.T) {
	file := "name: net\nargs:\n  width: 64\n  layers: [a, b]\n"
	var d doc
	require.NoError(t, Decode("f.yaml", []byte(file), &d, Origins{}))
	require.False(t, d.Args.IsZero())
	require.NoError(t, ApplySet("f.yaml", &d, "args.width=128", Origins{}))

	args := netArgs{Width: 1}
	origins := Origins{}
	require.NoError(t, d.Args.DecodeInto(&args, "args", origins))
	assert.Equal(t, netArgs{Width: 128, Layers: []string{"a", "b"}}, args, "the -set wins over the file")
	assert.Equal(t, Origin{Line: 4, Column: 11}, origins["args.layers"])
	assert.Equal(t, "args.width=128", origins["args.width"].Set)

	out, err := yaml.Marshal(d)
	require.NoError(t, err)
	assert.Contains(t, string(out), "width: 128", "config.yaml holds the decoded args")

	// The same strictness as the file, with the file's lines.
	bad := "args:\n  width: 64\n  depth: 3\n"
	require.NoError(t, Decode("g.yaml", []byte(bad), &d, nil))
	err = d.Args.DecodeInto(&netArgs{}, "args", nil)
	require.Error(t, err)
	assert.Equal(t, `g.yaml:3:3: unknown key "depth" in args (known: width, layers)`, err.Error())

	require.NoError(t, Decode("g.yaml", []byte("args:\n  width: wide\n"), &d, nil))
	err = d.Args.DecodeInto(&netArgs{}, "args", nil)
	require.EqualError(t, err, `g.yaml:2:10: args.width: expected an integer, found "wide"`)

	require.NoError(t, Decode("g.yaml", []byte("args:\n  width: 2\n"), &d, nil))
	require.NoError(t, ApplySet("g.yaml", &d, "args.heigth=3", nil))
	err = d.Args.DecodeInto(&netArgs{}, "args", nil)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), `-set args.heigth=3: unknown key "heigth" in args`), err.Error())
}

func TestRawLeftOut(t *testing.T) {
	var d doc
	require.NoError(t, Decode("f.yaml", []byte("name: x\n"), &d, nil))
	assert.True(t, d.Args.IsZero())
	args := netArgs{Width: 7}
	require.NoError(t, d.Args.DecodeInto(&args, "args", nil))
	assert.Equal(t, 7, args.Width, "defaults stay")
	out, err := yaml.Marshal(doc{Name: "x"})
	require.NoError(t, err)
	assert.NotContains(t, string(out), "args")
}

func ExampleDecode() {
	type Train struct {
		Epochs int     `yaml:"epochs"`
		LR     float64 `yaml:"lr"`
	}
	type Config struct {
		Train Train `yaml:"train"`
	}
	cfg := Config{Train: Train{Epochs: 10, LR: 0.1}} // the defaults
	err := Decode("run.yaml", []byte("train:\n  epochs: 3\n  lr: fast\n"), &cfg, nil)
	fmt.Println(err)
	err = Decode("run.yaml", []byte("train:\n  epochs: 3\n"), &cfg, nil)
	fmt.Println(cfg.Train.Epochs, cfg.Train.LR, err)
	// Output:
	// run.yaml:3:7: train.lr: expected a number, found "fast"
	// 3 0.1 <nil>
}

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/strictyaml"
	"github.com/hora-dl/hora/train"
)

// reference returns the Markdown reference generated from the train
// package's sources.
func reference(t *testing.T) string {
	t.Helper()
	ref, err := configReference(reflect.ValueOf(train.DefaultConfig()).Elem(), readSources(t))
	require.NoError(t, err)
	return ref
}

func readSources(t *testing.T) map[string]string {
	t.Helper()
	sources := map[string]string{}
	for _, name := range sourceFiles {
		data, err := os.ReadFile(filepath.Join("..", "..", name))
		require.NoError(t, err)
		sources[name] = string(data)
	}
	return sources
}

// TestGeneratedFilesAreCurrent fails when docs/config.md or
// train/configref_gen.go is older than the config structs.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	md, src, err := generate(filepath.Join("..", ".."))
	require.NoError(t, err)
	for path, want := range map[string][]byte{
		filepath.Join("..", "..", markdownPath): md,
		filepath.Join("..", "..", goPath):       src,
	} {
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run make docs")
		assert.Equal(t, string(want), string(got), "%s is stale: run make docs (go generate ./train)", path)
	}
}

// configKeys lists the dotted keys of the struct type t: leaves (one table
// row each) and sections (one heading each).
func configKeys(t reflect.Type, prefix string) (leaves, sections []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		name := strictyaml.FieldKey(f)
		if name == "" {
			continue
		}
		key := strictyaml.JoinPath(prefix, name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct || ft == rawType { // model.args is one key
			leaves = append(leaves, key)
			continue
		}
		sections = append(sections, key)
		l, s := configKeys(ft, key)
		leaves, sections = append(leaves, l...), append(sections, s...)
	}
	return leaves, sections
}

func TestConfigReferenceHasEveryKeyOnce(t *testing.T) {
	ref := reference(t)
	leaves, sections := configKeys(reflect.TypeOf(train.Config{}), "")
	require.Contains(t, leaves, "optimizer.lr")
	require.Contains(t, sections, "optimizer")
	rows := 0
	for _, line := range strings.Split(ref, "\n") {
		if strings.HasPrefix(line, "| `") {
			rows++
		}
	}
	assert.Equal(t, len(leaves), rows, "one table row per key")
	for _, key := range leaves {
		assert.Equal(t, 1, strings.Count(ref, "| `"+key+"` |"), "rows of key %s", key)
	}
	for _, key := range sections {
		assert.Equal(t, 1, strings.Count(ref, "# "+key+"\n"), "headings of section %s", key)
	}
}

func TestConfigReferenceRows(t *testing.T) {
	ref := reference(t)
	for _, row := range []string{
		"| `seed` | int ≥ 0 | `1` | Seed seeds every",
		"| `device` | string | `\"cpu\"` |",
		"| `timeline` | string | `\"\"` |",
		"| `model.name` | string | required |",
		"| `model.hidden` | list of int | `[512, 256]` |",
		"| `optimizer.lr` | number | required |",
		"| `optimizer.betas` | [2]number | `[0.9, 0.999]` |",
		"| `optimizer.eps` | number | `1e-8` |",
		"| `schedule.step_size` | int | — |",
		"| `dist.fusion_threshold` | int | `67108864` |",
		"| `data.normalize` | bool | `true` |",
	} {
		assert.Contains(t, ref, row)
	}
	general := strings.Index(ref, "\n## General\n")
	data := strings.Index(ref, "\n## data\n")
	require.True(t, general >= 0 && data > general, "General comes first, then the sections")
	assert.Contains(t, ref[general:data], "| `timeline` |", "top-level keys after the sections go to General too")
}

// Types for the tests of configReference on other sources.
type (
	refTestConfig struct {
		// Name is a name | with a bar
		// and a <placeholder>.
		Name  string         `yaml:"name"`
		Inner refTestSection `yaml:"inner"`
		skip  int
	}
	refTestSection struct {
		// Ratio is a ratio. Required, > 0.
		Ratio float64     `yaml:"ratio"`
		Steps []uint      `yaml:"steps"` // Steps are the steps.
		Deep  refTestDeep `yaml:"deep"`
	}
	refTestDeep struct {
		// Flag is a flag.
		Flag bool `yaml:"flag"`
	}
)

const refTestSource = `package main

type refTestConfig struct {
	// Name is a name | with a bar
	// and a <placeholder>.
	Name string
	// Inner is the inner section.
	Inner refTestSection
}

type refTestSection struct {
	// Ratio is a ratio. Required, > 0.
	Ratio float64
	Steps []uint // Steps are the steps.
	DOC_OF_DEEP
	Deep refTestDeep
}

type refTestDeep struct {
	// Flag is a flag.
	Flag bool
}
`

func TestConfigReferenceOtherSource(t *testing.T) {
	cfg := refTestConfig{Name: "x", Inner: refTestSection{Steps: []uint{1, 2}}}
	cfg.skip = 1
	src := strings.Replace(refTestSource, "DOC_OF_DEEP", "// Deep is nested.", 1)
	ref, err := configReference(reflect.ValueOf(cfg), map[string]string{"x.go": src})
	require.NoError(t, err)
	for _, want := range []string{
		"| `name` | string | `\"x\"` | Name is a name \\| with a bar and a \\<placeholder>. |",
		"## inner\n\nInner is the inner section.\n",
		"| `inner.ratio` | number | required | Ratio is a ratio. Required, > 0. |",
		"| `inner.steps` | list of int ≥ 0 | `[1, 2]` | Steps are the steps. |",
		"### inner.deep\n\nDeep is nested.\n",
		"| `inner.deep.flag` | bool | `false` | Flag is a flag. |",
	} {
		assert.Contains(t, ref, want)
	}
	assert.NotContains(t, ref, "skip")
}

func TestConfigReferenceErrors(t *testing.T) {
	tests := []struct {
		name    string
		source  string
		wantErr string
	}{
		{
			name:    "undocumented field",
			source:  strings.Replace(refTestSource, "// Ratio is a ratio. Required, > 0.\n", "", 1),
			wantErr: `field refTestSection.Ratio (key "inner.ratio") has no doc comment`,
		},
		{
			name:    "undocumented section",
			source:  strings.Replace(refTestSource, "DOC_OF_DEEP", "", 1),
			wantErr: `field refTestSection.Deep (key "inner.deep") has no doc comment`,
		},
		{
			name:    "type not in the sources",
			source:  "package main\n",
			wantErr: `type refTestConfig (holding key "name") is not declared in the embedded sources`,
		},
		{
			name:    "syntax error",
			source:  "package main\ntype {",
			wantErr: "config reference: parsing x.go:2:6:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := configReference(reflect.ValueOf(refTestConfig{}), map[string]string{"x.go": tt.source})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestFormatFloat(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {0.999, "0.999"}, {1e-8, "1e-8"}, {1e-10, "1e-10"}, {2.5e21, "2.5e21"}, {-3e-7, "-3e-7"},
	} {
		assert.Equal(t, tt.want, formatFloat(tt.x), "formatFloat(%g)", tt.x)
	}
}

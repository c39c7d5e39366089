package mpi

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHierarchicalMode(t *testing.T) {
	for _, tc := range []struct {
		mode, env string
		want, err string
	}{
		{"", "", "auto", ""},
		{"auto", "", "auto", ""},
		{"on", "", "on", ""},
		{"OFF", "", "off", ""},
		{"on", "0", "off", ""},
		{"off", "1", "on", ""},
		{"off", "auto", "auto", ""},
		{"maybe", "", "", `dist/mpi: hierarchical allreduce: mode "maybe": want auto, on or off`},
		{"on", "yes", "", `dist/mpi: hierarchical allreduce: HORA_HIERARCHICAL "yes": want auto, on or off`},
	} {
		t.Setenv(HierarchicalEnv, tc.env)
		got, err := hierarchicalMode(tc.mode)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, "mode %q, %s=%q", tc.mode, HierarchicalEnv, tc.env)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got, "mode %q, %s=%q", tc.mode, HierarchicalEnv, tc.env)
	}
}

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

func TestIallreduceAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		size, hosts int
		want        string
	}{
		{0, 0, "1"}, // no launcher (srun: PMIx only)
		{2, 1, "1"}, // one host
		{4, 1, "1"},
		{2, 2, "1"}, // 2 hosts × 1
		{3, 3, "1"}, // 3 hosts × 1: Rabenseifner halves the ring
		{4, 4, "1"},
		{4, 2, "3"}, // 2 hosts × 2, or 3 + 1
		{8, 2, "3"},
		{6, 2, "1"}, // not a power of two
	} {
		if got := iallreduceAlgorithm(tc.size, tc.hosts); got != tc.want {
			t.Errorf("iallreduceAlgorithm(%d, %d) = %s, want %s", tc.size, tc.hosts, got, tc.want)
		}
	}
}

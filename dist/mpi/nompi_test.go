//go:build !mpi || !cgo

package mpi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/dist"
)

// clearLauncher makes the test look like a process started without a
// launcher (LauncherSize ignores empty variables).
func clearLauncher(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS"} {
		t.Setenv(v, "")
	}
}

func TestInitWithoutMPISupport(t *testing.T) {
	assert.False(t, Built())
	for _, tc := range []struct {
		name, variable, value string
		wantErr               bool
	}{
		{"no launcher", "", "", false},
		{"one rank", "OMPI_COMM_WORLD_SIZE", "1", false},
		{"mpirun -np 2", "OMPI_COMM_WORLD_SIZE", "2", true},
		{"srun -n 4", "PMI_SIZE", "4", true},
		{"srun --mpi=pmix -n 2", "SLURM_STEP_NUM_TASKS", "2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearLauncher(t)
			if tc.variable != "" {
				t.Setenv(tc.variable, tc.value)
			}
			w, werr := InitWorld()
			c, err := Init()
			if !tc.wantErr {
				require.NoError(t, werr)
				assert.Equal(t, 1, w.Size())
				require.NoError(t, err)
				assert.Equal(t, 1, c.Size())
				assert.Equal(t, 0, c.Rank())
				assert.NoError(t, c.Close())
				return
			}
			require.ErrorIs(t, err, dist.ErrNoMPI)
			require.ErrorIs(t, werr, dist.ErrNoMPI)
			assert.Nil(t, c)
			msg := err.Error()
			assert.Contains(t, msg, tc.variable+"="+tc.value, "names the variable seen")
			assert.Contains(t, msg, "one of "+tc.value+" ranks", "says the rank count")
			assert.Contains(t, msg, "go build -tags mpi ./cmd/train", "says how to rebuild")
			assert.Contains(t, msg, "libopenmpi-dev")
			assert.Contains(t, msg, "make build")
		})
	}
}

// TestArrangeWithoutMPISupport checks that Arrange leaves a group of one
// alone, still checking its mode.
func TestArrangeWithoutMPISupport(t *testing.T) {
	clearLauncher(t)
	t.Setenv(HierarchicalEnv, "")
	c, err := InitWorld()
	require.NoError(t, err)
	got, err := Arrange(context.Background(), c, "on")
	require.NoError(t, err)
	assert.Same(t, c, got)
	assert.Equal(t, "one process", Describe(got))
	_, err = Arrange(context.Background(), c, "sideways")
	assert.ErrorContains(t, err, `mode "sideways"`)
}

//go:build !mpi || !cgo

package mpi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/dist"
)

// clearLauncher makes the test look like a process started without a
// launcher (LauncherSize ignores empty variables).
func clearLauncher(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"} {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearLauncher(t)
			if tc.variable != "" {
				t.Setenv(tc.variable, tc.value)
			}
			c, err := Init()
			if !tc.wantErr {
				require.NoError(t, err)
				assert.Equal(t, 1, c.Size())
				assert.Equal(t, 0, c.Rank())
				assert.NoError(t, c.Close())
				return
			}
			require.ErrorIs(t, err, dist.ErrNoMPI)
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

//go:build !mpi || !cgo

package mpi

import (
	"context"

	"github.com/hora-dl/hora/dist"
)

// built is false: this program was built without the `mpi` tag or cgo.
const built = false

// openCommunicator is never called without MPI support (InitWorld checks
// built first).
func openCommunicator() (dist.Communicator, error) {
	return nil, dist.ErrNoMPI
}

// arrange has nothing to arrange without MPI: c is dist.Single().
func arrange(_ context.Context, c dist.Communicator, _ string) (dist.Communicator, error) {
	return c, nil
}

// isComm is false: there are no MPI communicators.
func isComm(dist.Communicator) bool { return false }

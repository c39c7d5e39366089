//go:build !mpi || !cgo

package mpi

import "github.com/hora-dl/hora/dist"

// built is false: this program was built without the `mpi` tag or cgo.
const built = false

// openCommunicator is never called without MPI support (Init checks built
// first).
func openCommunicator() (dist.Communicator, error) {
	return nil, dist.ErrNoMPI
}

package mpi

import (
	"context"
	"fmt"
	"os"

	"github.com/hora-dl/hora/dist"
	"github.com/hora-dl/hora/dist/shm"
)

// MaxPieceBytes is the largest piece, in bytes, that one MPI collective
// call moves: Allreduce and Broadcast split larger buffers into pieces of
// at most this size and run them one after the other. OpenMPI 4.1 reduces
// a 64 MB buffer in ~120 ms in one call (glibc maps and page-faults its
// temporary buffer afresh on every call above 32 MB) but in ~11 ms in
// 16 MB pieces.
const MaxPieceBytes = 16 << 20

// RebuildHint is how to build a program with MPI support; it ends the
// error that Init returns when the program was started by mpirun but built
// without it.
const RebuildHint = "rebuild the program with -tags mpi, e.g. `go build -tags mpi ./cmd/train` (needs libopenmpi-dev; `make build` does it)"

// Init returns the communicator this process should use.
//
// When an MPI launcher (mpirun, srun) started this process as one of
// several ranks (see dist.LauncherSize), Init opens MPI (see Open) and
// returns its communicator; in a program built without MPI support (the
// `mpi` build tag, see Built) it returns an error wrapping dist.ErrNoMPI
// that says how to rebuild, so that N copies of the program never train
// independently while believing they are one job. Otherwise (no launcher,
// or a launcher with one rank) it returns dist.Single().
//
// When all the ranks run on this host, the communicator Init returns
// reduces through shared memory (see package dist/shm); HORA_SHM=0 turns
// that off. Call Init once per process.
func Init() (dist.Communicator, error) {
	n, v := dist.LauncherSize()
	if n <= 1 {
		return dist.Single(), nil
	}
	if !built {
		return nil, fmt.Errorf("%w: %s=%d says this process is one of %d ranks, but without MPI it would train alone: %s",
			dist.ErrNoMPI, v, n, n, RebuildHint)
	}
	c, err := openCommunicator()
	if err != nil || os.Getenv("HORA_SHM") == "0" {
		return c, err
	}
	// Ranks that share this host reduce through shared memory.
	w, err := shm.Wrap(context.Background(), c, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hora: rank %d: reducing through MPI only: %v\n", c.Rank(), err)
		return c, nil
	}
	return w, nil
}

// Built reports whether MPI support is compiled into this program (built
// with the `mpi` tag and cgo). Without it Open does not exist and Init
// returns dist.Single() or an error wrapping dist.ErrNoMPI.
func Built() bool { return built }

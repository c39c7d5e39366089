package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/hora-dl/hora/device"
)

// ReduceOp is how Allreduce combines the ranks' values.
type ReduceOp int

// The reductions every Communicator supports, elementwise over the buffer.
const (
	Sum     ReduceOp = iota + 1 // the sum over ranks
	Average                     // the sum divided by Size (truncated toward zero for Int64)
	Min                         // the smallest value
	Max                         // the largest value
)

// String returns the op's name ("sum").
func (op ReduceOp) String() string {
	switch op {
	case Sum:
		return "sum"
	case Average:
		return "average"
	case Min:
		return "min"
	case Max:
		return "max"
	}
	return "reduceop(" + strconv.Itoa(int(op)) + ")"
}

// Valid reports whether op is one of the defined reductions.
func (op ReduceOp) Valid() bool { return op >= Sum && op <= Max }

// Communicator is a group of ranks (processes or goroutines) that run
// collectives together. Rank r's k-th collective is matched with every
// other rank's k-th collective, so all ranks must call the same
// collectives, with the same lengths, types, ops and roots, in the same
// order. A Communicator is used by one goroutine at a time.
//
// Buffers are reduced in place. Every implementation accepts the buffers
// of the CPU device, of the types Float32, Float64, Int64 and Float16;
// others may accept more (device buffers, for NCCL).
//
// The collectives block until this rank's part is done or ctx is done.
// A collective abandoned because ctx ended leaves the group unusable:
// later calls return ErrBroken (on this rank) or a *RankError naming this
// rank (on the others, where the transport can tell).
type Communicator interface {
	// Rank returns this rank's index, 0 ≤ Rank < Size.
	Rank() int
	// Size returns the number of ranks.
	Size() int
	// LocalRank returns this rank's index among the ranks on its host
	// (which GPU it should use).
	LocalRank() int
	// LocalSize returns the number of ranks on this rank's host.
	LocalSize() int
	// Allreduce replaces b, on every rank, with the elementwise
	// reduction of all ranks' b.
	Allreduce(ctx context.Context, b device.Buffer, op ReduceOp) error
	// Broadcast copies root's b into every other rank's b.
	Broadcast(ctx context.Context, b device.Buffer, root int) error
	// Allgather concatenates every rank's src, in rank order, into dst on
	// every rank; dst.Len() must be Size() * src.Len().
	Allgather(ctx context.Context, dst, src device.Buffer) error
	// Barrier returns once every rank has called it.
	Barrier(ctx context.Context) error
	// Abort ends the group after a fatal error on this rank: the other
	// ranks' pending and later collectives fail with a *RankError naming
	// this rank, or, for separate processes, the job is terminated. It
	// does not return for transports that end the process.
	Abort(err error)
	// Close releases the communicator; collectives after Close return
	// ErrClosed. All ranks should Close.
	Close() error
}

// MultiAllreducer is implemented by transports that can reduce several
// buffers as one, without a fusion buffer: AllreduceMany acts as Allreduce
// on the concatenation of bufs (all of one type and device; the same
// lengths on every rank). The Engine uses it for fused tensors.
type MultiAllreducer interface {
	AllreduceMany(ctx context.Context, bufs []device.Buffer, op ReduceOp) error
}

// Sentinel errors of the communicators.
var (
	// ErrClosed is returned by collectives called after Close.
	ErrClosed = errors.New("dist: communicator closed")
	// ErrBroken is returned by collectives after one was abandoned part
	// way (its context ended): the ranks may disagree on what was done, so
	// the group cannot be used any more.
	ErrBroken = errors.New("dist: communicator broken by an abandoned collective")
	// ErrNoMPI means the program was started by an MPI launcher with
	// several ranks but was built without MPI support.
	ErrNoMPI = errors.New("dist: started by mpirun, but built without MPI support")
)

// RankError reports a failure caused by another rank: it aborted, died,
// or called a different collective.
type RankError struct {
	Rank int   // the rank at fault
	Err  error // what happened to it
}

// Error returns "dist: rank R: ...".
func (e *RankError) Error() string { return fmt.Sprintf("dist: rank %d: %v", e.Rank, e.Err) }

// Unwrap returns the cause.
func (e *RankError) Unwrap() error { return e.Err }

// launcherSizeVars are the environment variables in which launchers
// give the number of ranks, in the order LauncherSize reads them.
var launcherSizeVars = []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS"}

// LauncherSize returns the number of ranks an MPI-style launcher started
// (from OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE or, under srun with
// the pmix plugin, which sets no size of its own, SLURM_STEP_NUM_TASKS)
// and its variable's
// name, or 0 and "" when the process was not started by one.
func LauncherSize() (int, string) {
	for _, v := range launcherSizeVars {
		if s, ok := os.LookupEnv(v); ok {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				return n, v
			}
		}
	}
	return 0, ""
}

package mpi

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

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

// HierarchicalEnv is the environment variable that overrides Arrange's
// mode when set: auto, on (or 1) or off (or 0), as Horovod's
// HOROVOD_HIERARCHICAL_ALLREDUCE.
const HierarchicalEnv = "HORA_HIERARCHICAL"

// Init returns the communicator this process should use: InitWorld's,
// wrapped by Arrange (mode "auto") in the fastest transport for the
// ranks' layout. Call it once per process.
func Init() (dist.Communicator, error) {
	c, err := InitWorld()
	if err != nil {
		return nil, err
	}
	return Arrange(context.Background(), c, "auto")
}

// InitWorld returns this process's communicator without any wrapping.
//
// When an MPI launcher (mpirun, srun) started this process as one of
// several ranks (see dist.LauncherSize), InitWorld opens MPI (see Open)
// and returns the Comm of MPI_COMM_WORLD; in a program built without MPI
// support (the `mpi` build tag, see Built) it returns an error wrapping
// dist.ErrNoMPI that says how to rebuild, so that N copies of the program
// never train independently while believing they are one job. Otherwise
// (no launcher, or a launcher with one rank) it returns dist.Single().
func InitWorld() (dist.Communicator, error) {
	n, v := dist.LauncherSize()
	if n <= 1 {
		return dist.Single(), nil
	}
	if !built {
		return nil, fmt.Errorf("%w: %s=%d says this process is one of %d ranks, but without MPI it would train alone: %s",
			dist.ErrNoMPI, v, n, n, RebuildHint)
	}
	return openCommunicator()
}

// Arrange wraps c, a communicator of InitWorld, in the fastest transport
// for the ranks' layout, and returns it (or c itself):
//
//   - all the ranks on one host: shared memory (dist/shm's Wrap), unless
//     the environment sets HORA_SHM=0;
//   - several hosts, one of them with more than one rank, and mode "auto"
//     or "on": the hierarchical allreduce (shared memory within each
//     host, MPI between them; see the package doc), unless HORA_SHM=0;
//   - otherwise, or with mode "off": c.
//
// mode is "auto", "on" or "off" ("" is "auto"); the environment variable
// HierarchicalEnv, when set, overrides it. "auto" and "on" choose alike
// today: the hierarchical allreduce wherever it applies. It is collective:
// every rank calls it, with the same mode and environment, after which
// the ranks use only the returned communicator (its Close closes c). When
// shared memory cannot be mapped, Arrange says so on standard error and
// returns c. The returned communicator reports c's Rank, Size, LocalRank
// and LocalSize.
func Arrange(ctx context.Context, c dist.Communicator, mode string) (dist.Communicator, error) {
	mode, err := hierarchicalMode(mode)
	if err != nil {
		return nil, err
	}
	return arrange(ctx, c, mode)
}

// hierarchicalMode returns the mode Arrange applies: HierarchicalEnv's
// when set, else mode, as "auto", "on" or "off".
func hierarchicalMode(mode string) (string, error) {
	what := "mode"
	if v, ok := os.LookupEnv(HierarchicalEnv); ok && v != "" {
		mode, what = v, HierarchicalEnv
	}
	switch strings.ToLower(mode) {
	case "", "auto":
		return "auto", nil
	case "on", "1":
		return "on", nil
	case "off", "0":
		return "off", nil
	}
	return "", fmt.Errorf("dist/mpi: hierarchical allreduce: %s %q: want auto, on or off", what, mode)
}

// Describe names the transport of a communicator that Arrange returned,
// for a log: "one process", "MPI", "shared memory + MPI", or
// "hierarchical: shared memory on 2 hosts × 2 ranks + MPI between hosts"
// ("× 1–3 ranks" when the hosts hold different numbers).
func Describe(c dist.Communicator) string {
	if l, ok := c.(interface{ Layout() shm.Layout }); ok {
		lay := l.Layout()
		if lay.Hosts <= 1 {
			return "shared memory + MPI"
		}
		per := fmt.Sprint(lay.Most)
		if lay.Fewest != lay.Most {
			per = fmt.Sprintf("%d–%d", lay.Fewest, lay.Most)
		}
		return fmt.Sprintf("hierarchical: shared memory on %d hosts × %s ranks + MPI between hosts", lay.Hosts, per)
	}
	switch {
	case c.Size() == 1:
		return "one process"
	case isComm(c):
		return "MPI"
	}
	return fmt.Sprintf("%T", c)
}

// Built reports whether MPI support is compiled into this program (built
// with the `mpi` tag and cgo). Without it Open does not exist and Init
// returns dist.Single() or an error wrapping dist.ErrNoMPI.
func Built() bool { return built }

// iallreduceAlgorithm returns the MPI_Iallreduce algorithm of OpenMPI's
// libnbc for a job of size ranks on hosts hosts: "1", the ring, except
// for a power-of-two job spanning several hosts with more ranks than
// hosts, where "3", Rabenseifner's reduce-scatter and allgather, keeps
// more of the traffic inside the hosts. Every rank must pick the same
// algorithm, so it depends on the job's layout only, never on this
// host's share. Measured through MPI alone on 2 simulated hosts × 2
// ranks over 1 Gbit/s links, 4 MiB: ring 0.11–0.12 GB/s of bus
// bandwidth, Rabenseifner 0.14–0.16 (a blocking MPI_Allreduce 0.12–0.16);
// at 3 hosts × 1 rank Rabenseifner halves the ring's 0.115, and at
// 2 hosts × 1 they are alike.
func iallreduceAlgorithm(size, hosts int) string {
	if size > 2 && size&(size-1) == 0 && hosts > 1 && size > hosts {
		return "3"
	}
	return "1"
}

// launcherLayout returns the job's size and number of hosts as OpenMPI's
// launcher sets them, the same on every rank (0, 0 when it did not).
func launcherLayout() (size, hosts int) {
	size, _ = strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_SIZE"))
	hosts, _ = strconv.Atoi(os.Getenv("OMPI_MCA_orte_num_nodes"))
	return size, hosts
}

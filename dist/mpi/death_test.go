//go:build mpi && cgo

package mpi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
)

// roleEnv tells a test binary started by one of the tests below, under
// mpirun, which part to play (TestChildRole).
const roleEnv = "HORA_MPI_TEST_ROLE"

// jobLimit is how long a job whose rank died may take to end.
const jobLimit = 20 * time.Second

// TestRankDeath starts 2-rank jobs of this test binary in which rank 1
// dies (SIGKILL, exit status 1, Abort) while rank 0 waits in an
// Allreduce that rank 1 never joins, and checks that each job ends within
// jobLimit, fails, and says which rank it was.
func TestRankDeath(t *testing.T) {
	cases := []struct {
		role  string
		want  string        // a regular expression the job's output must match
		limit time.Duration // how long the job may take
	}{
		// mpirun's words for a rank killed by a signal, and for one that
		// exits with a non-zero status (its process name ends with the rank).
		{"kill", `process rank 1 with PID \d+ on node \S+ exited on signal 9`, jobLimit},
		{"exit", `Process name: \[\[\d+,\d+\],1\]\s+Exit code:\s+1`, jobLimit},
		// Abort's own message; MPI_Abort ends the job (OpenMPI's own notice
		// is sometimes lost to "ORTE_ERROR_LOG: Data unpack would read
		// past end of buffer", an OpenMPI 4.1 bug).
		{"abort", `hora: rank 1: aborting: rank 1 gives up`, jobLimit},
		// Abort called on rank 0 while its MPI thread polls an allreduce:
		// the thread calls MPI_Abort (Abort's fallback exit says so when
		// it has to step in).
		{"abort-busy", `hora: rank 0: aborting: rank 0 gives up`, jobLimit},
	}
	for _, tc := range cases {
		t.Run(tc.role, func(t *testing.T) {
			out, err, took := runJob(t, tc.role)
			require.Error(t, err, "the job must fail\n%s", out)
			assert.Less(t, took, tc.limit, "the job must end soon after a rank dies")
			assert.Regexp(t, tc.want, out)
			assert.NotContains(t, out, "rank 0 finished", "rank 0's allreduce cannot have completed")
			assert.NotContains(t, out, "MPI_Abort did not happen", "the MPI thread must call MPI_Abort itself")
		})
	}
}

// TestAbandonedCollective starts a 2-rank job in which rank 0's Allreduce
// times out because rank 1 never joins it: the call must return the
// context's error at once, later calls ErrBroken, Close an error wrapping
// ErrBroken; and the job must end when rank 0 exits.
func TestAbandonedCollective(t *testing.T) {
	out, err, took := runJob(t, "cancel")
	require.Error(t, err, "a rank exiting with a broken communicator fails the job\n%s", out)
	assert.Less(t, took, jobLimit)
	assert.Contains(t, out, "rank 0: cancel ok")
}

// TestFailureOnOneRank checks that a test failing on rank 1 only fails
// the job, with rank 1's output shown.
func TestFailureOnOneRank(t *testing.T) {
	out, err, took := runJob(t, "fail")
	require.Error(t, err, "the job must fail\n%s", out)
	assert.Less(t, took, jobLimit)
	assert.Contains(t, out, "deliberate failure on rank 1")
	assert.Contains(t, out, "another rank failed")
	assert.Contains(t, out, "--- output of rank 1 ---")
}

// runJob runs `mpirun -np 2 <this binary> -test.run=^TestChildRole$` with
// roleEnv=role and returns its output, its error and how long it took.
func runJob(t *testing.T, role string) (string, error, time.Duration) {
	t.Helper()
	if n, v := dist.LauncherSize(); n > 0 {
		t.Skipf("starts its own mpirun job: run the test binary directly, not under a launcher (%s=%d)", v, n)
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not in PATH (install openmpi-bin)")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*jobLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2",
		os.Args[0], "-test.run=^TestChildRole$", "-test.v")
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	t.Logf("mpirun (role %s) ended after %v: %v\n%s", role, took.Round(time.Millisecond), err, out.String())
	return out.String(), err, took
}

// TestChildRole is a rank of the jobs above; it does nothing unless
// roleEnv is set.
func TestChildRole(t *testing.T) {
	role := os.Getenv(roleEnv)
	if role == "" {
		t.Skip("a rank of TestRankDeath's jobs: runs only when " + roleEnv + " is set")
	}
	c := needComm(t)
	require.Equal(t, 2, c.Size())
	if role == "fail" {
		if c.Rank() == 1 {
			t.Error("deliberate failure on rank 1")
		}
		return
	}
	ctx := context.Background()
	require.NoError(t, c.Barrier(ctx))
	if c.Rank() == 1 {
		time.Sleep(200 * time.Millisecond) // let rank 0 enter its allreduce
		switch role {
		case "kill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case "exit":
			os.Exit(1)
		case "abort":
			c.Abort(errors.New("rank 1 gives up"))
		case "cancel", "abort-busy":
			time.Sleep(time.Minute) // never joins; mpirun kills it when rank 0 exits
		}
		t.Fatalf("rank 1 still running after %q", role)
	}
	b := alloc(t, device.Float32, 3*MaxPieceBytes/4)
	if role == "abort-busy" {
		go func() {
			time.Sleep(300 * time.Millisecond)
			c.Abort(errors.New("rank 0 gives up"))
		}()
	}
	if role != "cancel" {
		err := c.Allreduce(ctx, b, dist.Sum)
		fmt.Printf("rank 0 finished its allreduce: %v\n", err)
		return
	}
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Allreduce(tctx, b, dist.Sum)
	took := time.Since(start)
	var msgs []string
	if !errors.Is(err, context.DeadlineExceeded) {
		msgs = append(msgs, fmt.Sprintf("allreduce returned %v, want the deadline's error", err))
	}
	if took > 2*time.Second {
		msgs = append(msgs, fmt.Sprintf("allreduce returned after %v", took))
	}
	if err := c.Barrier(ctx); !errors.Is(err, dist.ErrBroken) {
		msgs = append(msgs, fmt.Sprintf("barrier after: %v, want ErrBroken", err))
	}
	if err := c.Close(); !errors.Is(err, dist.ErrBroken) {
		msgs = append(msgs, fmt.Sprintf("close: %v, want ErrBroken", err))
	}
	if err := c.Barrier(ctx); !errors.Is(err, dist.ErrClosed) {
		msgs = append(msgs, fmt.Sprintf("barrier after close: %v, want ErrClosed", err))
	}
	if _, err := Open(); !errors.Is(err, ErrFinalized) {
		msgs = append(msgs, fmt.Sprintf("open after close: %v, want ErrFinalized", err))
	}
	if len(msgs) > 0 {
		fmt.Printf("rank 0: cancel failed: %s\n", strings.Join(msgs, "; "))
		os.Exit(3)
	}
	fmt.Printf("rank 0: cancel ok (allreduce abandoned after %v: %v)\n", took.Round(time.Millisecond), err)
	os.Exit(0) // without MPI_Finalize: mpirun ends the job
}

// TestOpenWithoutLauncher runs TestSingletonChild in a child process (MPI
// can be initialized once per process): Open without mpirun makes a group
// of one (an MPI singleton).
func TestOpenWithoutLauncher(t *testing.T) {
	if n, v := dist.LauncherSize(); n > 0 {
		t.Skipf("checks a process started without a launcher (%s=%d)", v, n)
	}
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun is not in PATH (install openmpi-bin): an MPI singleton needs OpenMPI's runtime")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), jobLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSingletonChild$", "-test.v")
	cmd.Env = append(os.Environ(), roleEnv+"=singleton")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestSingletonChild")
}

// TestSingletonChild is the child process of TestOpenWithoutLauncher.
func TestSingletonChild(t *testing.T) {
	if os.Getenv(roleEnv) != "singleton" {
		t.Skip("the child of TestOpenWithoutLauncher: runs only when " + roleEnv + "=singleton")
	}
	c, err := Open()
	require.NoError(t, err)
	assert.Equal(t, 1, c.Size())
	assert.Equal(t, 0, c.Rank())
	assert.Equal(t, 1, c.LocalSize())
	again, err := Open()
	require.NoError(t, err)
	assert.Same(t, c, again)
	// OpenMPI leaves Go's signal handlers alone: a nil dereference is
	// still a panic, not an MPI stack trace.
	assert.Panics(t, func() {
		var p *int
		*p = 1
	})
	b := alloc(t, device.Float16, 5)
	require.NoError(t, c.Allreduce(context.Background(), b, dist.Average))
	require.NoError(t, c.Barrier(context.Background()))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.ErrorIs(t, c.Barrier(context.Background()), dist.ErrClosed)
	_, err = Open()
	assert.ErrorIs(t, err, ErrFinalized)
}

package train

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadHostfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(path, []byte("# the cluster\nnode1 slots=2\n\nnode2   # one slot\nnode3 slots=4 max_slots=8\n"), 0o644))
	hosts, err := readHostfile(path)
	require.NoError(t, err)
	assert.Equal(t, []hostSlots{{"node1", 2, "node1 slots=2"}, {"node2", 1, "node2"}, {"node3", 4, "node3 slots=4 max_slots=8"}}, hosts)
	assert.Equal(t, 7, totalSlots(hosts))
	assert.Equal(t, "node1, node2, node3", hostNames(hosts))

	written, err := writeHostfile(hosts[1:])
	require.NoError(t, err)
	defer os.Remove(written)
	again, err := readHostfile(written)
	require.NoError(t, err)
	assert.Equal(t, hosts[1:], again)

	for _, tc := range []struct{ text, want string }{
		{"node1 slots=0\n", "hosts:1: slots=0: expected a count ≥ 1"},
		{"node1\nnode2 slots=two\n", "hosts:2: slots=two: expected a count ≥ 1"},
		{"# nobody\n\n", "hosts: no host in the file"},
	} {
		require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
		_, err := readHostfile(path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestLaunchFlags(t *testing.T) {
	args := []string{"-config", "c.yaml", "-np", "4", "-hosts", "h", "-restarts=2", "-set", "train.epochs=3", "-q", "-out", "d", "-overwrite"}
	child := dropFlags(args, "restarts", "np", "hosts", "out", "overwrite")
	assert.Equal(t, []string{"-config", "c.yaml", "-set", "train.epochs=3", "-q"}, child)
	assert.Equal(t, []string{"resume", "-run", "d", "-set", "train.epochs=3", "-q"}, restartArgs("d", child))

	t.Setenv("HORA_MPIRUN", "")
	cmd := jobCommand("/bin/train", 4, "h", []string{"train"})
	assert.Contains(t, strings.Join(cmd.Args, " "), "--hostfile h -np 4 /bin/train train")
	t.Setenv("HORA_MPIRUN", "mpirun --mca x y")
	cmd = jobCommand("/bin/train", 2, "", []string{"resume"})
	assert.Equal(t, []string{"mpirun", "--mca", "x", "y", "-np", "2", "/bin/train", "resume"}, cmd.Args)
}

// TestRunJobEndsAnAbortedJob: a job that prints a rank's abort but does
// not end (as mpirun waiting for a lost host's daemon) is killed after
// abortGrace, with its process group.
func TestRunJobEndsAnAbortedJob(t *testing.T) {
	cmd := exec.Command("sh", "-c", `echo "hora: rank 0: aborting: dist: rank 1 on host b has not answered" >&2; sleep 60 & sleep 60`)
	var out syncBuffer
	start := time.Now()
	code, err := runJob(context.Background(), cmd, &out, &out)
	require.NoError(t, err)
	assert.Equal(t, exitFailure, code)
	assert.Less(t, time.Since(start), abortGrace+5*time.Second)
	assert.Contains(t, out.String(), "aborting: dist: rank 1 on host b")
	assert.Contains(t, out.String(), "mpirun did not end the job within")
}

// TestRunJobForwardsInterrupt: cancelling the launcher's context (SIGINT,
// SIGTERM) sends SIGTERM to the job.
func TestRunJobForwardsInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.Command("sh", "-c", `trap 'echo got TERM; exit 130' TERM; echo ready; while :; do sleep 0.1; done`)
	var out syncBuffer
	go func() {
		for !strings.Contains(out.String(), "ready") {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	code, err := runJob(ctx, cmd, &out, &out)
	require.NoError(t, err)
	assert.Equal(t, exitInterrupted, code)
	assert.Contains(t, out.String(), "got TERM")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

//go:build mpi

package train

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/checkpoint"
)

// The tests of this file run the trainer on several hosts: a cluster of
// Linux namespaces on this machine (scripts/cluster/cluster), each host
// with its own hostname, address, shaped link and private /tmp, where
// its data and run folders live. They need root and run only with
// HORA_TEST_CLUSTER=1 (make test-cluster).

// clusterName names the tests' cluster, apart from one a developer may
// have up (the default "hora").
const clusterName = "hct"

// clusterLimit is the training samples of the tests' epochs
// (HORA_CLUSTER_LIMIT; 0 for the whole of Fashion-MNIST).
func clusterLimit() int {
	if n, err := strconv.Atoi(os.Getenv("HORA_CLUSTER_LIMIT")); err == nil && n >= 0 {
		return n
	}
	return 7680
}

// testCluster is a cluster of hosts node1..nodeN with the trainer and
// Fashion-MNIST copied into each host's /tmp.
type testCluster struct {
	t      *testing.T
	script string
	hosts  int
}

// hostBin and hostData are where each host holds the trainer and its
// copy of the data.
const (
	hostBin    = "/tmp/hora/train"
	hostConfig = "/tmp/hora/mlp.yaml"
	hostData   = "/tmp/hora/data"
)

// newCluster brings up a cluster of n hosts whose links run at rate
// (tc's syntax) and installs the trainer bin and the data on each; it is
// torn down when the test ends.
func newCluster(t *testing.T, n int, rate, bin string) *testCluster {
	t.Helper()
	if os.Getenv("HORA_TEST_CLUSTER") != "1" {
		t.Skip("a test of several hosts: run it with HORA_TEST_CLUSTER=1 as root (make test-cluster)")
	}
	if os.Getuid() != 0 {
		t.Skip("building hosts out of namespaces needs root")
	}
	if _, err := os.Stat(filepath.Join(DefaultDataDir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skip("Fashion-MNIST not installed (make deps)")
	}
	script, err := filepath.Abs("../scripts/cluster/cluster")
	require.NoError(t, err)
	c := &testCluster{t: t, script: script, hosts: n}
	c.run("up", strconv.Itoa(n), rate)
	t.Cleanup(func() { c.run("down") })
	c.run("install", bin, hostBin)
	c.run("install", "../configs/fashion-mnist-mlp.yaml", hostConfig)
	files, err := filepath.Glob(filepath.Join(DefaultDataDir, "*-ubyte.gz"))
	require.NoError(t, err)
	for _, f := range files {
		c.run("install", f, filepath.Join(hostData, filepath.Base(f)))
	}
	return c
}

// command returns the cluster script's command with args, in the tests'
// cluster.
func (c *testCluster) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.script, args...)
	cmd.Env = append(os.Environ(), "HORA_CLUSTER="+clusterName)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs the cluster script and requires it to succeed.
func (c *testCluster) run(args ...string) string {
	c.t.Helper()
	out, err := c.command(context.Background(), args...).CombinedOutput()
	require.NoError(c.t, err, "cluster %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// execIn runs a command on host with stdin and requires it to succeed.
func (c *testCluster) execIn(host string, stdin []byte, args ...string) string {
	c.t.Helper()
	cmd := c.command(context.Background(), append([]string{"exec", host}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(c.t, err, "on %s: %s: %s", host, strings.Join(args, " "), out)
	return string(out)
}

// hostfile writes a hostfile of every host with slots each and returns
// its path (readable on every host).
func (c *testCluster) hostfile(slots int) string {
	c.t.Helper()
	return strings.TrimSpace(c.run("hostfile", strconv.Itoa(slots)))
}

// mpirunEnv is HORA_MPIRUN for train -np on the cluster: mpirun reaches
// the hosts through the cluster's rsh agent, over their eth0.
func (c *testCluster) mpirunEnv() string {
	c.t.Helper()
	return "HORA_MPIRUN=mpirun " + strings.TrimSpace(c.run("mpirun-args"))
}

// train runs the trainer on node1 with args (a -np N -hosts job, or one
// process), within limit; it returns the output and the exit status.
func (c *testCluster) train(limit time.Duration, args ...string) (string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := c.command(ctx, append([]string{"exec", "node1", "env", c.mpirunEnv(), hostBin}, args...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(c.t, ctx.Err(), "the job did not end within %v: %s", limit, out)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(c.t, err)
	}
	return string(out), code
}

// fetch copies a run's model.safetensors from node1 into a new local
// folder and returns that folder.
func (c *testCluster) fetch(runDir string) string {
	c.t.Helper()
	dir := c.t.TempDir()
	out := c.execIn("node1", nil, "cat", filepath.Join(runDir, modelFile))
	require.NoError(c.t, os.WriteFile(filepath.Join(dir, modelFile), []byte(out), 0o644))
	return dir
}

// clusterArgs are the flags of the tests' MLP runs: Fashion-MNIST from
// the host's own copy, clusterLimit samples, no progress bar.
func clusterArgs(out string, extra ...string) []string {
	return append([]string{"-config", hostConfig,
		"-set", "data.dir=" + hostData, "-set", fmt.Sprintf("train.limit=%d", clusterLimit()), "-set", "train.epochs=1",
		"-set", "output.progress=false", "-out", out}, extra...)
}

// TestClusterMatchesSingleProcess: one epoch of the MLP on 2 hosts × 1
// rank and 2 hosts × 2 ranks, batch B per rank, equals one process with
// batch N·B (dist.lr_scaling none), within 1e-5. The MLP has one hidden
// layer of 64: the config's 512-256 network at its learning rate is so
// sensitive to rounding that two single-process runs whose products sum
// in another order (Hora's GEMM against OpenBLAS) end 5-20% apart after
// an epoch.
func TestClusterMatchesSingleProcess(t *testing.T) {
	bin := buildTrain(t)
	c := newCluster(t, 2, "1gbit", bin)
	for _, slots := range []int{1, 2} {
		ranks := 2 * slots
		t.Run(fmt.Sprintf("2 hosts x %d", slots), func(t *testing.T) {
			c.t = t
			single := t.TempDir()
			// The reference: one process on this machine, its own copy
			// of the config and data.
			mlp := []string{"-set", "dist.lr_scaling=none", "-set", "model.hidden=[64]"}
			args := clusterArgs(single, append(mlp, "-set", fmt.Sprintf("train.batch_size=%d", 64*ranks))...)
			args[1] = "../configs/fashion-mnist-mlp.yaml"
			args[3] = "data.dir=" + DefaultDataDir
			out, err := exec.Command(bin, args...).CombinedOutput()
			require.NoError(t, err, "%s", out)

			run := "/tmp/run-" + strconv.Itoa(ranks)
			text, code := c.train(5*time.Minute, append(clusterArgs(run, append(mlp, "-set", "train.batch_size=64")...),
				"-np", strconv.Itoa(ranks), "-hosts", c.hostfile(slots))...)
			require.Equal(t, 0, code, "%s", text)
			assert.Contains(t, text, fmt.Sprintf("data-parallel over %d ranks", ranks))
			if slots > 1 {
				assert.Contains(t, text, "(hierarchical: shared memory on 2 hosts × 2 ranks + MPI between hosts)")
			} else {
				assert.Contains(t, text, "ranks (MPI)")
			}
			assert.Contains(t, text, "every rank holds the same weights")
			assertSameWeights(t, single, c.fetch(run))
		})
	}
}

// TestClusterResumeWithoutSharedRunFolder: the run folder exists on
// rank 0's host only. Resumed, the job reads the checkpoint there and
// sends it to rank 1, and ends bit for bit where an uninterrupted run
// does. (Before, rank 1 found no checkpoint on its host and trained from
// the beginning while rank 0 resumed.)
func TestClusterResumeWithoutSharedRunFolder(t *testing.T) {
	c := newCluster(t, 2, "1gbit", buildTrain(t))
	hosts := c.hostfile(1)
	job := func(args ...string) string {
		t.Helper()
		text, code := c.train(4*time.Minute, append(args, "-np", "2", "-hosts", hosts)...)
		require.Equal(t, 0, code, "%s", text)
		return text
	}
	job(clusterArgs("/tmp/whole", "-set", "train.epochs=2")...)
	job(clusterArgs("/tmp/halves", "-set", "train.epochs=1")...)
	out, _ := c.command(context.Background(), "exec", "node2", "ls", "/tmp").CombinedOutput()
	require.NotContains(t, string(out), "halves", "rank 1's host must hold no run folder")
	text := job("resume", "-run", "/tmp/halves", "-set", "train.epochs=2")
	assert.Contains(t, text, "resuming from /tmp/halves/checkpoints/")
	assert.Contains(t, text, "every rank holds the same weights")

	a, _, err := checkpoint.Load(filepath.Join(c.fetch("/tmp/whole"), modelFile))
	require.NoError(t, err)
	b, _, err := checkpoint.Load(filepath.Join(c.fetch("/tmp/halves"), modelFile))
	require.NoError(t, err)
	for name, w := range a {
		assert.Equal(t, w.Float32s(), b[name].Float32s(), name)
	}
}

// TestClusterDataMustMatch: a host whose data is not rank 0's (here its
// training files are the test set's) stops the job at its start, with an
// error naming the host.
func TestClusterDataMustMatch(t *testing.T) {
	c := newCluster(t, 2, "1gbit", buildTrain(t))
	c.execIn("node2", nil, "sh", "-c", "cd "+hostData+" && cp t10k-images-idx3-ubyte.gz train-images-idx3-ubyte.gz && cp t10k-labels-idx1-ubyte.gz train-labels-idx1-ubyte.gz")
	text, code := c.train(2*time.Minute, append(clusterArgs("/tmp/run", "-set", "train.limit=0"), "-np", "2", "-hosts", c.hostfile(1))...)
	assert.Equal(t, exitInput, code, "%s", text)
	assert.Regexp(t, `the data \(data.dir /tmp/hora/data\) differs between hosts: rank 0 on host node1 has 60000 training .*rank 1 on host node2 has 10000 training`, text)
}

// watchJob runs the trainer on node1 with args and returns its output
// and error. fault runs, once, when the first progress line of epoch 1
// arrives; ended is the time the job's first line containing endMark
// arrived (zero if none did), and struck when fault ran.
func (c *testCluster) watchJob(args []string, fault func(), endMark string) (out string, struck, ended time.Time, err error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := c.command(ctx, append([]string{"exec", "node1", "env", c.mpirunEnv(), hostBin}, args...)...)
	// An os.Pipe, not an io.Pipe: mpirun's remote shell to a lost host
	// may hold the write end long after the job ended.
	pr, pw, err := os.Pipe()
	require.NoError(c.t, err)
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(c.t, cmd.Start())
	pw.Close()

	var mu sync.Mutex
	var text strings.Builder
	progress := regexp.MustCompile(`epoch 1/\d+ +\d+/\d+ steps`)
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			text.WriteString(line + "\n")
			if struck.IsZero() && progress.MatchString(line) {
				fault()
				struck = time.Now()
			}
			if ended.IsZero() && strings.Contains(line, endMark) {
				ended = time.Now()
			}
			mu.Unlock()
		}
	}()
	err = cmd.Wait()
	select { // the last lines, unless a leftover process holds the pipe
	case <-lines:
	case <-time.After(2 * time.Second):
		pr.Close()
		<-lines
	}
	mu.Lock()
	defer mu.Unlock()
	return text.String(), struck, ended, err
}

// TestClusterLinkDown: a host's link goes down mid-epoch. The job ends
// within dist.timeout_s (plus the launcher's grace for mpirun), naming
// the unreachable rank and host; with -restarts 1 the launcher finds the
// host gone and finishes the run on the one that remains, with 1 rank
// instead of 2, from the last checkpoint.
func TestClusterLinkDown(t *testing.T) {
	c := newCluster(t, 2, "1gbit", buildTrain(t))
	const timeout = 5 * time.Second
	args := append(clusterArgs("/tmp/run", "-set", "train.limit=30720", "-set", "train.epochs=2", "-set", "checkpoint.every_steps=5",
		"-set", fmt.Sprintf("dist.timeout_s=%g", timeout.Seconds()), "-set", "output.progress=true"),
		"-np", "2", "-hosts", c.hostfile(1), "-restarts", "1")
	out, linkDown, aborted, err := c.watchJob(args, func() { c.run("link", "node2", "down") }, "aborting:")
	require.NoError(t, err, "%s", out)
	require.False(t, linkDown.IsZero(), "the run never showed progress: %s", out)
	require.False(t, aborted.IsZero(), "no rank aborted: %s", out)
	t.Logf("the lost host was reported %v after its link went down (dist.timeout_s %v)", aborted.Sub(linkDown).Round(100*time.Millisecond), timeout)
	assert.Less(t, aborted.Sub(linkDown), timeout+3*time.Second, "the loss was noticed too late")
	assert.Regexp(t, `aborting: dist: rank 1 on host node2 \(10\.77\.0\.2:\d+\) has not answered for 5s`, out)
	assert.Contains(t, out, "host(s) node2 do not answer; continuing on node1 with 1 rank(s) instead of 2")
	assert.Contains(t, out, "written by 2 rank(s), now 1")
	assert.Contains(t, out, "epoch 2/2")
}

// TestClusterRankKilled: the rank on another host is killed (kill -9)
// mid-epoch: the job ends at once, well within dist.timeout_s, naming
// the rank, and train exits with status 1.
func TestClusterRankKilled(t *testing.T) {
	c := newCluster(t, 2, "1gbit", buildTrain(t))
	args := append(clusterArgs("/tmp/run", "-set", "train.limit=30720", "-set", "train.epochs=2", "-set", "output.progress=true"),
		"-np", "2", "-hosts", c.hostfile(1))
	out, killed, _, err := c.watchJob(args, func() { c.run("kill", "node2", hostBin) }, "")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, exitFailure, ee.ExitCode(), "%s", out)
	require.False(t, killed.IsZero(), "the run never showed progress: %s", out)
	t.Logf("the job ended %v after rank 1 was killed", time.Since(killed).Round(100*time.Millisecond))
	assert.Less(t, time.Since(killed), 20*time.Second, "the job ran on after its rank died")
	assert.Regexp(t, `rank 1 on host node2 .*closed its connection|rank 1 .*node2|\[\[\d+,1\],1\]`, out)
}

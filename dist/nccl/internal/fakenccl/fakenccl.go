// Package fakenccl builds a fake NCCL library (libnccl.so.2) from C++ with
// g++, for testing dist/nccl without a GPU, beside the CUDA emulator of
// device/cuda/cudaemu (whose device pointers are host addresses).
//
// The fake implements the part of NCCL's C ABI that dist/nccl binds
// (ncclGetVersion, ncclGetUniqueId, ncclCommInitRank, ncclAllReduce,
// ncclBroadcast, ncclAllGather, ncclCommGetAsyncError, ncclCommDestroy,
// ncclCommAbort, ncclGetErrorString, plus ncclCommCount and
// ncclCommUserRank) with NCCL's types, enum values, result codes and
// arithmetic: every operation on two elements rounds to the element type,
// the ranks are combined in rank order, and ncclAvg premultiplies
// floating-point inputs by 1/nranks (rounded to the type) while it divides
// integer sums, truncating, as NCCL does.
//
// The ranks are threads of one process, found through a process-wide table
// of groups by unique id. Work completes asynchronously, as on a GPU:
// ncclCommInitRank and the collectives register the calling rank's part
// and return at once; the last rank to arrive does the work of all and
// marks it done, and until then ncclCommGetAsyncError reports
// ncclInProgress (7). Several ranks can therefore share one emulated
// device, whose calls run one at a time on one thread. Collectives that
// differ between the ranks fail on all of them with ncclInvalidUsage;
// ncclCommAbort makes the other ranks' operations fail with
// ncclRemoteError. The extra function horaFakeNcclLiveComms (not NCCL's)
// returns the number of communicators not yet destroyed.
package fakenccl

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed csrc/nccl.cpp
var source []byte

// Library is the file name Build writes: the soname dist/nccl looks for
// first.
const Library = "libnccl.so.2"

// Available reports whether the fake can be built here (g++ is in PATH),
// or why not.
func Available() error {
	if _, err := exec.LookPath("g++"); err != nil {
		return fmt.Errorf("fakenccl: g++ not found: %w", err)
	}
	return nil
}

// Build writes the fake's source into dir and compiles it into
// dir/libnccl.so.2. Point HORA_CUDA_LIBS at dir (before the first
// dist/nccl.New) to make dist/nccl load it.
func Build(dir string) error {
	if err := Available(); err != nil {
		return err
	}
	src := filepath.Join(dir, "fakenccl.cpp")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return fmt.Errorf("fakenccl: %w", err)
	}
	out, err := exec.Command("g++", "-O2", "-std=c++17", "-shared", "-fPIC",
		"-o", filepath.Join(dir, Library), src, "-lpthread").CombinedOutput()
	if err != nil {
		return fmt.Errorf("fakenccl: g++ failed: %w\n%s", err, out)
	}
	return nil
}

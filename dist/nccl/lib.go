package nccl

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/device/cuda"
	"github.com/hora-dl/hora/dist"
)

// uniqueID is ncclUniqueId (`struct { char internal[128]; }`), which
// ncclCommInitRank takes by value.
type uniqueID struct{ Internal [128]byte }

// api holds the NCCL functions Hora calls, bound at run time. ncclResult_t,
// ncclDataType_t and ncclRedOp_t are int32; ncclComm_t, cudaStream_t,
// device pointers and size_t are uintptr.
type api struct {
	path    string // the library file loaded
	version int    // ncclGetVersion's code (22105 for 2.21.5)

	ncclGetVersion     func(v *int32) int32
	ncclGetUniqueId    func(id *uniqueID) int32
	ncclCommInitRank   func(comm *uintptr, nranks int32, id uniqueID, rank int32) int32
	ncclAllReduce      func(send, recv uintptr, count uintptr, dt, op int32, comm, stream uintptr) int32
	ncclBroadcast      func(send, recv uintptr, count uintptr, dt, root int32, comm, stream uintptr) int32
	ncclAllGather      func(send, recv uintptr, count uintptr, dt int32, comm, stream uintptr) int32
	ncclCommDestroy    func(comm uintptr) int32
	ncclCommAbort      func(comm uintptr) int32
	ncclGetErrorString func(r int32) string
	// ncclCommGetAsyncError is optional (NCCL ≥ 2.4): nil when missing.
	ncclCommGetAsyncError func(comm uintptr, err *int32) int32
}

// minVersion is the oldest NCCL Hora uses: 2.10, the first with ncclAvg.
const minVersion = 21000

// NCCL's enum values (nccl.h).
const (
	ncclInt64   = 4
	ncclFloat16 = 6
	ncclFloat32 = 7
	ncclFloat64 = 8

	ncclSum = 0
	ncclMax = 2
	ncclMin = 3
	ncclAvg = 4

	ncclInProgress = 7
)

// resultNames are the names of ncclResult_t values.
var resultNames = map[int32]string{
	0: "ncclSuccess",
	1: "ncclUnhandledCudaError",
	2: "ncclSystemError",
	3: "ncclInternalError",
	4: "ncclInvalidArgument",
	5: "ncclInvalidUsage",
	6: "ncclRemoteError",
	7: "ncclInProgress",
}

var (
	libOnce sync.Once
	libAPI  *api
	libErr  error
)

// library loads NCCL once per process: the first of cuda.NCCLNames found
// in cuda.LibraryDirs (HORA_CUDA_LIBS first), or by the dynamic loader.
func library() (*api, error) {
	libOnce.Do(func() { libAPI, libErr = load() })
	return libAPI, libErr
}

// load opens and binds NCCL and checks its version.
func load() (*api, error) {
	h, path, err := cuda.OpenLibrary("NCCL (libnccl.so.2)", cuda.NCCLNames)
	if err != nil {
		return nil, err
	}
	a := &api{path: path}
	syms := []struct {
		name     string
		fn       any
		optional bool
	}{
		{"ncclGetVersion", &a.ncclGetVersion, false},
		{"ncclGetUniqueId", &a.ncclGetUniqueId, false},
		{"ncclCommInitRank", &a.ncclCommInitRank, false},
		{"ncclAllReduce", &a.ncclAllReduce, false},
		{"ncclBroadcast", &a.ncclBroadcast, false},
		{"ncclAllGather", &a.ncclAllGather, false},
		{"ncclCommDestroy", &a.ncclCommDestroy, false},
		{"ncclCommAbort", &a.ncclCommAbort, false},
		{"ncclGetErrorString", &a.ncclGetErrorString, false},
		{"ncclCommGetAsyncError", &a.ncclCommGetAsyncError, true},
	}
	for _, s := range syms {
		addr, err := cuda.Dlsym(h, s.name)
		if err != nil || addr == 0 {
			if s.optional {
				continue
			}
			return nil, fmt.Errorf("dist/nccl: %s has no %s (too old a version?): %v", path, s.name, err)
		}
		purego.RegisterFunc(s.fn, addr)
	}
	var v int32
	if err := a.check("ncclGetVersion", a.ncclGetVersion(&v)); err != nil {
		return nil, err
	}
	a.version = int(v)
	if a.version < minVersion {
		return nil, fmt.Errorf("dist/nccl: %s is NCCL %s; Hora needs 2.10 or newer (for ncclAvg)", path, versionString(a.version))
	}
	return a, nil
}

// versionString returns "2.21.5" for the code of ncclGetVersion, which is
// X*10000+Y*100+Z since 2.9 and X*1000+Y*100+Z before.
func versionString(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// check turns an ncclResult_t into nil or a *cuda.Error naming fn, the
// result and ncclGetErrorString's text.
func (a *api) check(fn string, r int32) error {
	if r == 0 {
		return nil
	}
	e := &cuda.Error{Func: fn, Code: int(r), Name: resultNames[r]}
	if e.Name == "" {
		e.Name = fmt.Sprintf("ncclResult_%d", r)
	}
	if a.ncclGetErrorString != nil {
		e.Text = a.ncclGetErrorString(r)
	}
	return e
}

// dataType returns NCCL's type for dt (one transport.CheckArgs accepted).
func dataType(dt device.DType) int32 {
	switch dt {
	case device.Float32:
		return ncclFloat32
	case device.Float64:
		return ncclFloat64
	case device.Int64:
		return ncclInt64
	case device.Float16:
		return ncclFloat16
	}
	panic(fmt.Sprintf("dist/nccl: no NCCL type for %v", dt))
}

// redOp returns NCCL's op for op (a valid one).
func redOp(op dist.ReduceOp) int32 {
	switch op {
	case dist.Sum:
		return ncclSum
	case dist.Average:
		return ncclAvg
	case dist.Min:
		return ncclMin
	case dist.Max:
		return ncclMax
	}
	panic(fmt.Sprintf("dist/nccl: no NCCL op for %v", op))
}

//go:build !windows

package nccl

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// abiSource is a C function with ncclCommInitRank's shape: a pointer, an
// int, ncclUniqueId by value, an int. It writes a checksum of the id's
// bytes through the pointer and returns it combined with both ints.
const abiSource = `
typedef struct { char internal[128]; } ncclUniqueId;
long long idsum(long long* out, int nranks, ncclUniqueId id, int rank) {
	long long s = 0;
	for (int i = 0; i < 128; i++) s = s * 31 + (unsigned char)id.internal[i];
	*out = s;
	return s ^ ((long long)nranks << 40) ^ ((long long)rank << 20);
}
`

// TestStructByValue checks that purego passes the 128-byte ncclUniqueId
// by value, with an int after it, as a C compiler does (on amd64 and
// arm64 Linux): the binding of ncclCommInitRank depends on it.
func TestStructByValue(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: ", err)
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "idsum.c"), filepath.Join(dir, "libidsum.so")
	require.NoError(t, os.WriteFile(src, []byte(abiSource), 0o644))
	out, err := exec.Command(gcc, "-O2", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	require.NoError(t, err)
	defer purego.Dlclose(h)
	var idsum func(out *int64, nranks int32, id uniqueID, rank int32) int64
	purego.RegisterLibFunc(&idsum, h, "idsum")

	var id uniqueID
	var want int64
	for i := range id.Internal {
		id.Internal[i] = byte(i*37 + 11)
		want = want*31 + int64(id.Internal[i])
	}
	var got int64
	r := idsum(&got, 3, id, 2)
	assert.Equal(t, want, got, "the id's bytes as the C function saw them")
	assert.Equal(t, want^3<<40^2<<20, r, "the ints around the id")
}

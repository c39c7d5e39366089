package cudaemu

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hora-dl/hora/internal/diskcache"
)

// The C++ sources live in csrc/ because the go command refuses C++ files
// in a package that does not use cgo.
//
//go:embed csrc/prelude.h csrc/cuda.cpp csrc/nvrtc.cpp csrc/cublas.cpp
var sources embed.FS

// sourceFiles are the files of csrc that Build writes and compiles.
var sourceFiles = []string{"prelude.h", "cuda.cpp", "nvrtc.cpp", "cublas.cpp"}

// Library file names Build writes, as device/cuda looks for them.
const (
	DriverLib = "libcuda.so.1"
	NVRTCLib  = "libnvrtc.so.12"
	CUBLASLib = "libcublas.so.12"
)

// compiler returns the C++ compiler to use: $HORA_EMU_CXX or g++.
func compiler() string {
	if c := os.Getenv("HORA_EMU_CXX"); c != "" {
		return c
	}
	return "g++"
}

// Available returns nil when the C++ compiler Build and the fake NVRTC
// need (g++ in PATH, or $HORA_EMU_CXX) is there, else an error saying why
// (tests skip then).
func Available() error {
	if _, err := exec.LookPath(compiler()); err != nil {
		return fmt.Errorf("cuda emulator: no C++ compiler (%s): %w", compiler(), err)
	}
	return nil
}

// Prelude returns the header the fake NVRTC puts before a program.
func Prelude() string {
	b, err := sources.ReadFile("csrc/prelude.h")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Build writes the emulator's sources into dir (created if needed) and
// builds dir/libcuda.so.1, dir/libnvrtc.so.12 and dir/libcublas.so.12
// with g++; prelude.h is copied there too. Point device/cuda at dir with
// HORA_CUDA_LIBS=dir (before the libraries are first loaded).
func Build(dir string) error { return build(dir, nil) }

// build is Build with extra compiler flags for the driver (tests build a
// ucontext variant with -DHORA_EMU_UCONTEXT).
func build(dir string, driverFlags []string) error {
	if err := Available(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cuda emulator: %w", err)
	}
	for _, f := range sourceFiles {
		b, err := sources.ReadFile("csrc/" + f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return fmt.Errorf("cuda emulator: %w", err)
		}
	}
	// The fake NVRTC embeds the prelude as a raw string literal.
	delim := "HORA_PRELUDE"
	prelude := Prelude()
	if strings.Contains(prelude, ")"+delim+"\"") {
		return errors.New("cuda emulator: the prelude contains its raw-string delimiter")
	}
	inc := "R\"" + delim + "(" + prelude + ")" + delim + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, "prelude_gen.inc"), []byte(inc), 0o644); err != nil {
		return fmt.Errorf("cuda emulator: %w", err)
	}

	common := []string{"-std=c++17", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall"}
	gxx := func(out, src string, extra ...string) error {
		args := append([]string{}, common...)
		args = append(args, "-Wl,-soname,"+out, "-o", out, src)
		args = append(args, extra...)
		cmd := exec.Command(compiler(), args...)
		cmd.Dir = dir
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("cuda emulator: building %s: %s %s: %v\n%s", out, compiler(), strings.Join(args, " "), err, buf.String())
		}
		return nil
	}
	var wg sync.WaitGroup
	var nvErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		nvErr = gxx(NVRTCLib, "nvrtc.cpp", "-I.")
	}()
	err := gxx(DriverLib, "cuda.cpp", append(append([]string{}, driverFlags...), "-ldl", "-lpthread")...)
	if err == nil {
		// cuBLAS checks its operands against the driver's allocations.
		err = gxx(CUBLASLib, "cublas.cpp", "-L.", "-l:"+DriverLib, "-Wl,-rpath,$ORIGIN")
	}
	wg.Wait()
	return errors.Join(err, nvErr)
}

// CacheDir returns the folder where the fake NVRTC caches builds and
// BuildCached keeps the libraries: $HORA_EMU_CACHE, or
// hora-emu-cache-UID in the system temporary folder.
func CacheDir() string {
	if d := os.Getenv("HORA_EMU_CACHE"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("hora-emu-cache-%d", os.Getuid()))
}

var (
	cachedOnce sync.Once
	cachedDir  string
	cachedErr  error
)

// BuildCached builds the libraries once into a folder of CacheDir named
// by a hash of the sources (reused by later processes) and returns it.
func BuildCached() (string, error) {
	cachedOnce.Do(func() { cachedDir, cachedErr = buildCached() })
	return cachedDir, cachedErr
}

func buildCached() (string, error) {
	if err := Available(); err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", compiler())
	for _, f := range sourceFiles {
		b, _ := sources.ReadFile("csrc/" + f)
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	dir := filepath.Join(CacheDir(), "libs-"+hex.EncodeToString(h.Sum(nil))[:24])
	if complete(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return "", fmt.Errorf("cuda emulator: %w", err)
	}
	// One process builds; the others (go test runs packages in parallel) wait.
	unlock := diskcache.Lock(dir + ".lock")
	defer unlock()
	if complete(dir) {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(CacheDir(), ".libs-tmp-*")
	if err != nil {
		return "", fmt.Errorf("cuda emulator: %w", err)
	}
	if err := Build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if complete(dir) { // another process got there first
			return dir, nil
		}
		return "", fmt.Errorf("cuda emulator: %w", err)
	}
	return dir, nil
}

// complete reports whether dir holds the three libraries.
func complete(dir string) bool {
	for _, f := range []string{DriverLib, NVRTCLib, CUBLASLib} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			return false
		}
	}
	return true
}

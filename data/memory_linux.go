package data

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// memoryLeft estimates how many more bytes this process can allocate:
// the least of the memory the kernel says is available (MemAvailable)
// and the address space left under its limit (ulimit -v). ok is false
// when neither is known.
func memoryLeft() (n int64, ok bool) {
	if avail, found := procField("/proc/meminfo", "MemAvailable:"); found {
		n, ok = avail, true
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil && lim.Cur != ^uint64(0) && lim.Cur < 1<<62 {
		if used, found := procField("/proc/self/status", "VmSize:"); found {
			left := int64(lim.Cur) - used
			if !ok || left < n {
				n, ok = left, true
			}
		}
	}
	return n, ok
}

// procField reads a "Name:   1234 kB" line of a /proc file, in bytes.
func procField(path, name string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == name {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

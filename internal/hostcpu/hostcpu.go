// Package hostcpu tells how many CPUs the host has online, whatever the
// process's affinity mask (which runtime.NumCPU reports): data-parallel
// ranks use it to tell whether mpirun bound them to a few cores and
// whether there are more ranks than cores.
package hostcpu

import (
	"os"
	"strconv"
	"strings"
)

// Online returns the number of CPUs the host has online (from
// /sys/devices/system/cpu/online on Linux), or 0 when it cannot tell.
func Online() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	return Count(strings.TrimSpace(string(b)))
}

// Count counts the CPUs of a Linux CPU list such as "0-3,8,10-11"; it
// returns 0 for a malformed list.
func Count(list string) int {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if found {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			return 0
		}
		n += b - a + 1
	}
	return n
}

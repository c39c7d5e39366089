// Package hostcpu describes the host's processors: how many are online,
// whatever the process's affinity mask (which runtime.NumCPU reports), so
// that data-parallel ranks can tell whether mpirun bound them to a few
// cores and whether there are more ranks than cores; and the processor's
// model and generation, which key what is measured per machine and head
// the benchmarks' tables.
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

// Describe returns the processor's model name followed by the numbers that
// tell its generation, from /proc/cpuinfo on Linux: "AMD EPYC (family 25,
// model 17)" on x86, where a virtual machine often shows one name for
// several generations (Zen 4 and Zen 5 are both "AMD EPYC" there), and
// "arm64 (implementer 0x41, part 0xd0c)" on an arm64 machine without a
// model name. It returns "" when it cannot tell.
func Describe() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return DescribeIn(string(b))
}

// DescribeIn is Describe for a /proc/cpuinfo text: the first processor's
// fields.
func DescribeIn(cpuinfo string) string {
	fields := map[string]string{}
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) == "" && len(fields) > 0 {
				break // the end of the first processor's block
			}
			continue
		}
		key = strings.TrimSpace(key)
		if _, seen := fields[key]; !seen {
			fields[key] = strings.TrimSpace(value)
		}
	}
	var numbers []string
	for _, f := range [][2]string{{"cpu family", "family"}, {"model", "model"}, {"CPU implementer", "implementer"}, {"CPU part", "part"}} {
		if v := fields[f[0]]; v != "" {
			numbers = append(numbers, f[1]+" "+v)
		}
	}
	name := fields["model name"]
	if name == "" && fields["CPU implementer"] != "" {
		name = "arm64"
	}
	switch {
	case len(numbers) == 0:
		return name
	case name == "":
		return strings.Join(numbers, ", ")
	}
	return name + " (" + strings.Join(numbers, ", ") + ")"
}

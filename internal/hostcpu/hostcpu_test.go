package hostcpu

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCount(t *testing.T) {
	for list, want := range map[string]int{"0": 1, "0-1": 2, "0-3,8,10-11": 7, "": 0, "x": 0, "3-1": 0} {
		assert.Equal(t, want, Count(list), "%q", list)
	}
}

func TestOnline(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /sys on Linux")
	}
	assert.GreaterOrEqual(t, Online(), runtime.NumCPU())
}

func TestDescribeIn(t *testing.T) {
	for _, tc := range []struct{ info, want string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n", "AMD EPYC (family 25, model 17)"},
		{"processor\t: 0\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0c\n\nprocessor\t: 1\nCPU part\t: 0xd40\n", "arm64 (implementer 0x41, part 0xd0c)"},
		{"processor : 0\nmodel name : Some CPU\n", "Some CPU"},
		{"processor : 0\ncpu family : 6\nmodel : 85\n", "family 6, model 85"},
		{"", ""},
	} {
		if got := DescribeIn(tc.info); got != tc.want {
			t.Errorf("DescribeIn(%q) = %q, want %q", tc.info, got, tc.want)
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil && Describe() != DescribeIn(string(b)) {
		t.Errorf("Describe() = %q, not what /proc/cpuinfo gives, %q", Describe(), DescribeIn(string(b)))
	}
}

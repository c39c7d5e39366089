package hostcpu

import (
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

func TestModelIn(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got, want := ModelIn(info), "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz"; got != want {
		t.Errorf("ModelIn = %q, want %q", got, want)
	}
	if got := ModelIn("processor : 0\nmodel : 85\n"); got != "" {
		t.Errorf("ModelIn without a model name = %q, want \"\"", got)
	}
}

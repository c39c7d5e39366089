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

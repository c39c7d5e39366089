//go:build amd64 && !noasm

package vec

import "golang.org/x/sys/cpu"

func init() {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return
	}
	available = []int{levelAVX2, levelGo}
	level = levelAVX2
	if cpu.X86.HasAVX512F {
		available = []int{levelAVX512, levelAVX2, levelGo}
		level = levelAVX512
	}
}

// bufPtr is &b[0], or nil for an empty b (SGD without momentum).
func bufPtr(b []float32) *float32 {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}

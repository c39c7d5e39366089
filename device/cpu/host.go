package cpu

import "github.com/hora-dl/hora/device/cpu/internal/vec"

// AddFloat32 sets dst[i] = a[i] + b[i] with the device's vectorised loop,
// on the calling goroutine; dst may be a or b. It panics when the lengths
// differ. Transports that reduce host memory themselves use it.
func AddFloat32(dst, a, b []float32) { vec.Add(dst, a, b) }

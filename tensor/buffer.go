package tensor

import (
	"fmt"

	"github.com/hora-dl/hora/device"
)

// FromBuffer returns a dense tensor of the given shape over b's first
// elements, without a copy: writes through either are seen by the other.
// It panics when the shape needs more elements than b has.
func FromBuffer(b device.Buffer, shape ...int) *Tensor {
	n := numElements(shape)
	if n > b.Len() {
		panic(fmt.Sprintf("tensor: FromBuffer: shape %v needs %d elements, the buffer has %d", shape, n, b.Len()))
	}
	t := &Tensor{buf: b}
	t.setContiguous(shape)
	return t
}

package devicetest

import (
	"math"
	"slices"

	"github.com/hora-dl/hora/device"
)

// storedTypes returns the types Memory and Copy are checked in: allTypes,
// and device.Float16 when dev stores it (its Alloc accepts it).
func storedTypes(dev device.Device) []device.DType {
	if !storesHalf(dev) {
		return allTypes
	}
	return append(slices.Clone(allTypes), device.Float16)
}

// storesHalf reports whether dev allocates device.Float16 buffers.
func storesHalf(dev device.Device) bool {
	b, err := dev.Alloc(device.Float16, 1)
	if err != nil {
		return false
	}
	b.Free()
	return true
}

// halfBits returns the IEEE binary16 bits of v rounded to nearest, ties to
// even, computed from the definition: v = frac·2^exp, the spacing of
// halves around v is 2^(e-10) for a normal v in [2^e, 2^(e+1)) and 2^-24
// below 2^-14, and the magnitude is rounded to a whole number of spacings.
// NaN gives the quiet NaN 0x7e00 (with v's sign).
func halfBits(v float64) uint16 {
	var sign uint16
	if math.Signbit(v) {
		sign = 0x8000
	}
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return sign | 0x7e00
	case math.IsInf(a, 1):
		return sign | 0x7c00
	case a == 0:
		return sign
	}
	_, exp := math.Frexp(a) // a in [2^(exp-1), 2^exp)
	e := exp - 1
	if e < -14 {
		// Subnormal spacing: m·2^-24, m in [0, 1024] (1024 is 2^-14).
		m := math.RoundToEven(math.Ldexp(a, 24))
		return sign | uint16(m)
	}
	m := math.RoundToEven(math.Ldexp(a, 10-e)) // in [1024, 2048]
	if m == 2048 {
		m, e = 1024, e+1
	}
	if e > 15 {
		return sign | 0x7c00
	}
	return sign | uint16(e+15)<<10 | uint16(m-1024)
}

// halfValue returns the value of the IEEE binary16 bits h, from the
// definition: (-1)^s · 2^(e-15) · 1.f for 0 < e < 31, (-1)^s · 2^-14 · 0.f
// for e = 0, and ±Inf or NaN for e = 31.
func halfValue(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e, f := int(h>>10)&31, float64(h&0x3ff)
	switch e {
	case 31:
		if f != 0 {
			return math.NaN()
		}
		return math.Inf(int(s))
	case 0:
		return s * math.Ldexp(f, -24)
	}
	return s * math.Ldexp(1024+f, e-25)
}

// roundHalf returns v as stored in a device.Float16 element.
func roundHalf(v float64) float64 { return halfValue(halfBits(v)) }

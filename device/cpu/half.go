package cpu

import (
	"fmt"
	"math"
)

// IEEE 754 binary16 ("half") conversions. A half is held as its bits in a
// uint16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. The
// largest finite half is 65504, the smallest normal 2^-14 and the smallest
// subnormal 2^-24. Conversions to half round to nearest, ties to even;
// magnitudes from 65520 up become ±Inf; NaNs stay NaNs (quiet, keeping
// the sign and the top bits of the payload); zeros keep their sign.
// Conversions from half are exact.

// Float32ToFloat16 converts src to IEEE binary16 bits in dst, rounding to
// nearest, ties to even. It panics when the lengths differ. It runs on the
// calling goroutine; callers split large slices themselves.
func Float32ToFloat16(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("cpu: Float32ToFloat16: len(dst) = %d, len(src) = %d", len(dst), len(src)))
	}
	f32sToF16(dst, src)
}

// Float16ToFloat32 converts the IEEE binary16 bits in src to float32 in
// dst (exactly: every half is a float32). It panics when the lengths
// differ. It runs on the calling goroutine; callers split large slices
// themselves.
func Float16ToFloat32(dst []float32, src []uint16) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("cpu: Float16ToFloat32: len(dst) = %d, len(src) = %d", len(dst), len(src)))
	}
	f16sToF32(dst, src)
}

// f32ToF16 rounds f to the nearest half.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	b &= 0x7fffffff
	switch {
	case b >= 0x38800000 && b < 0x477ff000: // [2^-14, 65520): normal half
		b -= (127 - 15) << 23 // rebias the exponent
		// Round the 13 dropped fraction bits to nearest even; a carry
		// out of the fraction correctly bumps the exponent.
		b += 0x0fff + (b>>13)&1
		return sign | uint16(b>>13)
	case b < 0x33000000: // below 2^-25: rounds to zero
		return sign
	case b < 0x38800000: // [2^-25, 2^-14): subnormal half (or 2^-14)
		e := b >> 23
		m := b&0x7fffff | 0x800000
		return sign | uint16(roundShift(uint64(m), 126-e))
	case b <= 0x7f800000: // [65520, Inf]
		return sign | 0x7c00
	}
	return sign | 0x7e00 | uint16(b>>13)&0x3ff // NaN: quiet, top of payload
}

// f64ToF16 rounds f to the nearest half directly (not through float32,
// which could round twice).
func f64ToF16(f float64) uint16 {
	b := math.Float64bits(f)
	sign := uint16(b>>48) & 0x8000
	b &= 1<<63 - 1
	switch {
	case b >= 0x3f10000000000000 && b < 0x40effe0000000000: // [2^-14, 65520)
		b -= (1023 - 15) << 52
		b += 1<<41 - 1 + (b>>42)&1
		return sign | uint16(b>>42)
	case b < 0x3e60000000000000: // below 2^-25
		return sign
	case b < 0x3f10000000000000: // [2^-25, 2^-14)
		e := uint32(b >> 52)
		m := b&(1<<52-1) | 1<<52
		return sign | uint16(roundShift(m, 1051-e))
	case b <= 0x7ff0000000000000: // [65520, Inf]
		return sign | 0x7c00
	}
	return sign | 0x7e00 | uint16(b>>42)&0x3ff
}

// roundShift returns m / 2^s rounded to nearest, ties to even (0 < s < 64).
func roundShift(m uint64, s uint32) uint64 {
	q := m >> s
	rem := m & (1<<s - 1)
	half := uint64(1) << (s - 1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	return q
}

// f16ToF32 returns the value of the half h (exact).
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	em := uint32(h & 0x7fff)
	switch {
	case em >= 0x7c00: // Inf or NaN: keep the payload
		return math.Float32frombits(sign | 0x7f800000 | (em&0x3ff)<<13)
	case em >= 0x0400: // normal: rebias the exponent
		return math.Float32frombits(sign | (em<<13 + (127-15)<<23))
	}
	// Zero or subnormal: em·2^-24, exact in float32.
	return math.Float32frombits(sign | math.Float32bits(float32(em)*0x1p-24))
}

func f32sToF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f32ToF16(v)
	}
}

func f64sToF16(dst []uint16, src []float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f64ToF16(v)
	}
}

func i64sToF16(dst []uint16, src []int64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = f64ToF16(float64(v))
	}
}

func f16sToF32(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = f16ToF32(h)
	}
}

func f16sToF64(dst []float64, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = float64(f16ToF32(h))
	}
}

func f16sToI64(dst []int64, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = int64(f16ToF32(h))
	}
}

func i64ToF16(v int64) uint16 { return f64ToF16(float64(v)) }

func f16ToF64(h uint16) float64 { return float64(f16ToF32(h)) }

func f16ToI64(h uint16) int64 { return int64(f16ToF32(h)) }

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// halfDecode returns the value of the binary16 bits h from the definition
// (NaN for any NaN pattern): (-1)^s·2^(e-15)·(1 + f/1024) for 0 < e < 31,
// (-1)^s·2^-14·(f/1024) for e = 0, ±Inf or NaN for e = 31.
func halfDecode(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e, f := int(h>>10&31), float64(h&0x3ff)
	switch e {
	case 31:
		if f != 0 {
			return math.NaN()
		}
		return s * math.Inf(1)
	case 0:
		return s * f / 1024 * math.Ldexp(1, -14)
	}
	return s * (1 + f/1024) * math.Ldexp(1, e-15)
}

// isHalfNaN reports whether h encodes a NaN.
func isHalfNaN(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

func TestHalfToFloat32AllPatterns(t *testing.T) {
	t.Parallel()
	bad := 0
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := f16ToF32(h)
		want := halfDecode(h)
		if isHalfNaN(h) {
			ok := got != got && math.Signbit(float64(got)) == (h&0x8000 != 0) &&
				uint16(math.Float32bits(got)>>13)&0x3ff == h&0x3ff // payload kept
			if !ok && bad < 10 {
				t.Errorf("f16ToF32(%#04x) = %#08x, want a NaN with the same sign and payload", h, math.Float32bits(got))
			}
			if !ok {
				bad++
			}
			continue
		}
		// Every half is a float32: compare bits, which also checks -0.
		if math.Float32bits(got) != math.Float32bits(float32(want)) || float64(got) != want {
			if bad < 10 {
				t.Errorf("f16ToF32(%#04x) = %g, want %g", h, got, want)
			}
			bad++
		}
	}
	assert.Zero(t, bad, "patterns decoded wrongly")
}

func TestHalfRoundTripAllPatterns(t *testing.T) {
	t.Parallel()
	bad := 0
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		want := h
		if isHalfNaN(h) {
			want = h | 0x200 // a NaN comes back quiet, sign and payload kept
		}
		f := f16ToF32(h)
		for name, got := range map[string]uint16{
			"f32ToF16": f32ToF16(f),
			"f64ToF16": f64ToF16(float64(f)),
		} {
			if got != want {
				if bad < 10 {
					t.Errorf("%s(f16ToF32(%#04x)) = %#04x, want %#04x", name, h, got, want)
				}
				bad++
			}
		}
	}
	assert.Zero(t, bad, "patterns that do not round-trip")
}

// halfCases are float32 inputs with their binary16 bits, worked out by hand
// from the format (1 = 0x3c00: exponent 15, fraction 0; the spacing of
// halves is 2^-10 in [1, 2), 2 in [2048, 4096), 32 in [32768, 65536) and
// 2^-24 below 2^-14).
var halfCases = []struct {
	name string
	in   float32
	want uint16
}{
	{"zero", 0, 0x0000},
	{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
	{"one", 1, 0x3c00},
	{"minus two", -2, 0xc000},
	{"half", 0.5, 0x3800},
	{"0.1", 0.1, 0x2e66},     // 0.0999755859375
	{"1/3", 1.0 / 3, 0x3555}, // 0.333251953125
	{"pi", math.Pi, 0x4248},  // 3.140625
	{"tie 1+2^-11 to even 1", 1 + 0x1p-11, 0x3c00},
	{"tie 1+3·2^-11 to even 1+2^-9", 1 + 3*0x1p-11, 0x3c02},
	{"just above the tie 1+2^-11", 1 + 0x1p-11 + 0x1p-23, 0x3c01},
	{"just below the tie 1+3·2^-11", 1 + 3*0x1p-11 - 0x1p-23, 0x3c01},
	{"tie 2049 to even 2048", 2049, 0x6800},
	{"tie 2051 to even 2052", 2051, 0x6802},
	{"tie -2051", -2051, 0xe802},
	{"carry into the exponent", 2047.9, 0x6800}, // 2047.9 rounds to 2048
	{"max half", 65504, 0x7bff},
	{"below the overflow tie", 65519.996, 0x7bff},
	{"overflow tie 65520 goes to Inf", 65520, 0x7c00},
	{"overflow", 1e6, 0x7c00},
	{"negative overflow", -70000, 0xfc00},
	{"max float32", math.MaxFloat32, 0x7c00},
	{"+Inf", float32(math.Inf(1)), 0x7c00},
	{"-Inf", float32(math.Inf(-1)), 0xfc00},
	{"smallest normal 2^-14", 0x1p-14, 0x0400},
	{"tie below 2^-14 goes up to even", 0x1p-14 - 0x1p-25, 0x0400},
	{"largest subnormal", 0x1p-14 - 0x1p-24, 0x03ff},
	{"smallest subnormal 2^-24", 0x1p-24, 0x0001},
	{"negative smallest subnormal", -0x1p-24, 0x8001},
	{"tie 2^-25 to even 0", 0x1p-25, 0x0000},
	{"tie -2^-25 to -0", -0x1p-25, 0x8000},
	{"just above 2^-25", 0x1p-25 + 0x1p-48, 0x0001},
	{"tie 3·2^-25 to even 2", 3 * 0x1p-25, 0x0002},
	{"tie 5·2^-25 to even 2", 5 * 0x1p-25, 0x0002},
	{"subnormal 100·2^-24", 100 * 0x1p-24, 0x0064},
	{"2^-26 underflows", 0x1p-26, 0x0000},
	{"float32 subnormal underflows", 0x1p-149, 0x0000},
	{"negative float32 subnormal to -0", -0x1p-149, 0x8000},
}

func TestFloat32ToHalf(t *testing.T) {
	t.Parallel()
	for _, tc := range halfCases {
		assert.Equal(t, fmt.Sprintf("%#04x", tc.want), fmt.Sprintf("%#04x", f32ToF16(tc.in)), "f32ToF16 %s (%g)", tc.name, tc.in)
		// The float64 path agrees on float32 inputs (exact in float64).
		assert.Equal(t, fmt.Sprintf("%#04x", tc.want), fmt.Sprintf("%#04x", f64ToF16(float64(tc.in))), "f64ToF16 %s (%g)", tc.name, tc.in)
	}
	for _, nan := range []float32{float32(math.NaN()), -float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000)} {
		h := f32ToF16(nan)
		assert.True(t, isHalfNaN(h), "f32ToF16(NaN %#08x) = %#04x is not a NaN", math.Float32bits(nan), h)
		assert.Equal(t, math.Signbit(float64(nan)), h&0x8000 != 0, "sign of NaN %#08x", math.Float32bits(nan))
		h = f64ToF16(float64(nan))
		assert.True(t, isHalfNaN(h), "f64ToF16(NaN) = %#04x is not a NaN", h)
	}
}

// TestFloat64ToHalfRoundsOnce checks that float64 inputs are rounded to
// half directly: going through float32 would round twice.
func TestFloat64ToHalfRoundsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   float64
		want uint16
	}{
		{"just above the tie 1+2^-11", 1 + 0x1p-11 + 0x1p-40, 0x3c01}, // float32 would make it the tie, then 0x3c00
		{"just below the tie 1+3·2^-11", 1 + 3*0x1p-11 - 0x1p-40, 0x3c01},
		{"just above 2^-25", 0x1p-25 + 0x1p-60, 0x0001},
		{"just below the overflow tie", 65520 - 0x1p-30, 0x7bff},
		{"huge", 1e300, 0x7c00},
		{"tiny", -1e-300, 0x8000},
		{"float64 subnormal", 0x1p-1074, 0x0000},
	} {
		assert.Equal(t, fmt.Sprintf("%#04x", tc.want), fmt.Sprintf("%#04x", f64ToF16(tc.in)), "%s (%g)", tc.name, tc.in)
	}
}

// halfNearestValue is halfDecode for finite, non-negative h, with 0x7c00
// standing for 2^16 (the next value if the exponent had no bound, which is
// where IEEE 754 rounding to nearest puts the overflow threshold).
func halfNearestValue(h uint16) float64 {
	if h == 0x7c00 {
		return 65536
	}
	return halfDecode(h)
}

// checkNearest checks from the definition that h is x rounded to nearest
// even: no neighbouring half is closer, a tie picks the even fraction, the
// sign is x's, and magnitudes from 65520 give Inf.
func checkNearest(x float64, h uint16) error {
	if math.Signbit(x) != (h&0x8000 != 0) {
		return fmt.Errorf("sign of %g: got %#04x", x, h)
	}
	a, m := math.Abs(x), h&0x7fff
	if a >= 65520 {
		if m != 0x7c00 {
			return fmt.Errorf("%g: got %#04x, want Inf", x, h)
		}
		return nil
	}
	if m >= 0x7c00 {
		return fmt.Errorf("%g: got %#04x, want a finite half", x, h)
	}
	// The differences are exact (Sterbenz) wherever the comparison is close.
	d := math.Abs(a - halfNearestValue(m))
	for _, n := range []uint16{m - 1, m + 1} {
		if n > 0x7c00 { // below zero
			continue
		}
		dn := math.Abs(a - halfNearestValue(n))
		if dn < d || (dn == d && m&1 == 1) {
			return fmt.Errorf("%g: got %#04x (%g), but %#04x (%g) is nearer or an even tie", x, h, halfDecode(h), n, halfNearestValue(n))
		}
	}
	return nil
}

func TestHalfRoundsToNearestEven(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(16, 0x686f7261))
	const n = 1 << 18
	bad := 0
	for i := 0; i < n; i++ {
		// Float32s whose exponents cover the subnormal, normal and
		// overflowing half ranges (and a few beyond), any fraction.
		e := uint32(95 + rng.IntN(60))
		b := rng.Uint32()&0x807fffff | e<<23
		x := math.Float32frombits(b)
		if err := checkNearest(float64(x), f32ToF16(x)); err != nil {
			if bad < 10 {
				t.Errorf("f32ToF16: %v", err)
			}
			bad++
		}
		// A float64 with bits below float32's precision.
		y := float64(x) * (1 + float64(rng.IntN(1<<20)-1<<19)*0x1p-50)
		if err := checkNearest(y, f64ToF16(y)); err != nil {
			if bad < 10 {
				t.Errorf("f64ToF16: %v", err)
			}
			bad++
		}
	}
	assert.Zero(t, bad, "of %d values rounded wrongly", 2*n)
}

func TestBulkHalfConversions(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 0x686f7261))
	for _, n := range []int{0, 1, 7, 16, 33, 1000} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 100)
		}
		h := make([]uint16, n)
		Float32ToFloat16(h, src)
		back := make([]float32, n)
		Float16ToFloat32(back, h)
		for i := range src {
			require.Equal(t, f32ToF16(src[i]), h[i], "Float32ToFloat16[%d] of %d", i, n)
			require.Equal(t, f16ToF32(h[i]), back[i], "Float16ToFloat32[%d] of %d", i, n)
			// |error| <= half a spacing: 2^-11 relative for normal halves.
			assert.InDelta(t, src[i], back[i], math.Abs(float64(src[i]))*0x1p-11+0x1p-25, "round trip [%d]", i)
		}
	}
	assert.PanicsWithValue(t, "cpu: Float32ToFloat16: len(dst) = 2, len(src) = 3", func() {
		Float32ToFloat16(make([]uint16, 2), make([]float32, 3))
	})
	assert.PanicsWithValue(t, "cpu: Float16ToFloat32: len(dst) = 4, len(src) = 3", func() {
		Float16ToFloat32(make([]float32, 4), make([]uint16, 3))
	})
}

func BenchmarkFloat32ToFloat16(b *testing.B) {
	src := make([]float32, 1<<20)
	for i := range src {
		src[i] = float32(i%4096) * 0.37
	}
	dst := make([]uint16, len(src))
	b.SetBytes(int64(len(src)) * 6)
	for b.Loop() {
		Float32ToFloat16(dst, src)
	}
	b.ReportMetric(float64(len(src))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

func BenchmarkFloat16ToFloat32(b *testing.B) {
	src := make([]uint16, 1<<20)
	for i := range src {
		src[i] = uint16(i) & 0x7bff
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(len(src)) * 6)
	for b.Loop() {
		Float16ToFloat32(dst, src)
	}
	b.ReportMetric(float64(len(src))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}

package disttest

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
)

// A gen gives rank r's value at index i, in units: the value is units/4
// for the float types and units itself for Int64. Quarter units keep every
// value, sum and quotient of the cases exact in all four types.
type gen func(r, i int) int64

// mix hashes (i, r) to 32 well-spread bits (multiplicative hashing: no
// short period in i, unlike a small modulus, so that an offset error of
// any power of two shows).
func mix(r, i int) uint32 { return (uint32(i)*0x9e3779b1 + uint32(r)*0x85ebca77) * 0xc2b2ae3d }

// std is the values of most cases: quarters in [-4, 4) for the float
// types; for Int64 the integers in [-16, 16) plus -2^55, 0 or 2^55 by
// index, so that a result that went through float64 would be off.
func std(dt device.DType) gen {
	return func(r, i int) int64 {
		h := mix(r, i)
		u := int64(h>>27) - 16
		if dt == device.Int64 {
			u += (int64(h>>25&3)%3 - 1) << 55
		}
		return u
	}
}

// divisible is values whose sum over the size ranks is size times a small
// number, so that their Average is exact in floating point however a
// transport divides (rank 0 takes the others' deviations back).
func divisible(size int) gen {
	dev := func(r, i int) int64 { return int64(mix(r, i)>>29) - 4 }
	return func(r, i int) int64 {
		u := int64(mix(-1, i)>>28) - 8
		if r > 0 {
			return u + dev(r, i)
		}
		for q := 1; q < size; q++ {
			u -= dev(q, i)
		}
		return u
	}
}

// filler is what a buffer holds before a collective overwrites it: 1000+r
// (or 4000+4r for Int64), far from any value of std or divisible.
func filler(r int) int64 { return 4000 + 4*int64(r) }

// reduced returns the expected result of op over the size ranks' values
// of g, computed in integers (Average truncates toward zero; for the float
// types the cases use divisible, whose sums divide exactly).
func reduced(op dist.ReduceOp, g gen, size int) func(i int) int64 {
	return func(i int) int64 {
		acc := g(0, i)
		for r := 1; r < size; r++ {
			v := g(r, i)
			switch op {
			case dist.Sum, dist.Average:
				acc += v
			case dist.Min:
				acc = min(acc, v)
			case dist.Max:
				acc = max(acc, v)
			}
		}
		if op == dist.Average {
			acc /= int64(size)
		}
		return acc
	}
}

// halfBits returns the IEEE binary16 encoding of units/4, which must be
// zero or a normal half (it panics otherwise: a bug in the case).
func halfBits(units int64) uint16 {
	if units == 0 {
		return 0
	}
	var sign uint16
	m := uint64(units)
	if units < 0 {
		sign, m = 0x8000, uint64(-units)
	}
	k := bits.Len64(m) - 1 // 2^k ≤ m < 2^(k+1): the value is in [2^(k-2), 2^(k-1))
	e := k - 2 + 15
	frac := m - 1<<k
	if k > 10 {
		if frac&(1<<(k-10)-1) != 0 {
			panic(fmt.Sprintf("disttest: %d/4 is not a half", units))
		}
		frac >>= k - 10
	} else {
		frac <<= 10 - k
	}
	if e < 1 || e > 30 {
		panic(fmt.Sprintf("disttest: %d/4 is not a normal half", units))
	}
	return sign | uint16(e)<<10 | uint16(frac)
}

// halfValue returns the value of the IEEE binary16 bits h, built bit by
// bit as a float32 (every half is one).
func halfValue(h uint16) float64 {
	sign := uint32(h&0x8000) << 16
	e, frac := uint32(h>>10&0x1f), uint32(h&0x3ff)
	switch {
	case e == 31: // Inf or NaN
		return float64(math.Float32frombits(sign | 0x7f800000 | frac<<13))
	case e == 0: // zero or subnormal: frac·2^-24
		v := float64(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return float64(math.Float32frombits(sign | (e+127-15)<<23 | frac<<13))
}

// period is the period of every case's values: a prime, so that tables of
// at most period values stand for buffers of any length while an offset
// error of any power of two still shows.
const period = 65521

// table returns f(i) for i < min(n, period): the pattern a buffer of n
// elements repeats.
func table(n int, f func(i int) int64) []int64 {
	t := make([]int64, min(n, period))
	for i := range t {
		t[i] = f(i)
	}
	return t
}

// typed converts a pattern in units to the host values of dt.
func typed(dt device.DType, units []int64) any {
	switch dt {
	case device.Float32:
		out := make([]float32, len(units))
		for i, u := range units {
			out[i] = float32(u) * 0.25
		}
		return out
	case device.Float64:
		out := make([]float64, len(units))
		for i, u := range units {
			out[i] = float64(u) * 0.25
		}
		return out
	case device.Int64:
		return units
	case device.Float16:
		out := make([]uint16, len(units))
		for i, u := range units {
			out[i] = halfBits(u)
		}
		return out
	}
	return nil
}

// tile fills dst with copies of pat.
func tile[T any](dst, pat []T) {
	for k := 0; k < len(dst); k += len(pat) {
		copy(dst[k:], pat)
	}
}

// fill allocates a buffer of n elements of dt holding the pattern pat.
func (e *env) fill(dt device.DType, n int, pat []int64) (device.Buffer, error) {
	b, err := e.dev.Alloc(dt, n)
	if err != nil {
		return nil, err
	}
	if err := e.write(b, pat); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// write fills b with the pattern pat.
func (e *env) write(b device.Buffer, pat []int64) error {
	n := b.Len()
	var host any
	switch p := typed(b.DType(), pat).(type) {
	case []float32:
		h := hostSlice(&e.f32, n)
		tile(h, p)
		host = h
	case []float64:
		h := hostSlice(&e.f64, n)
		tile(h, p)
		host = h
	case []int64:
		h := hostSlice(&e.i64, n)
		tile(h, p)
		host = h
	case []uint16:
		h := hostSlice(&e.f16, n)
		tile(h, p)
		host = h
	default:
		return fmt.Errorf("disttest: no values for %v", b.DType())
	}
	return e.dev.Write(b, host)
}

// check records a failure, named by what, unless b holds len(pats)
// blocks of blockLen elements, block j repeating the pattern pats[j].
func (e *env) check(what string, b device.Buffer, blockLen int, pats ...[]int64) {
	n := b.Len()
	if n != blockLen*len(pats) {
		e.failf("%s: %d elements, want %d", what, n, blockLen*len(pats))
		return
	}
	var bad, first int
	var got, want any
	var err error
	switch b.DType() {
	case device.Float32:
		h := hostSlice(&e.f32, n)
		if err = e.dev.Read(h, b); err == nil {
			ps := typedAll[float32](b.DType(), pats)
			if bad, first = compare(h, blockLen, ps); bad > 0 {
				got, want = h[first], ps[first/blockLen][first%blockLen%period]
			}
		}
	case device.Float64:
		h := hostSlice(&e.f64, n)
		if err = e.dev.Read(h, b); err == nil {
			ps := typedAll[float64](b.DType(), pats)
			if bad, first = compare(h, blockLen, ps); bad > 0 {
				got, want = h[first], ps[first/blockLen][first%blockLen%period]
			}
		}
	case device.Int64:
		// Compared as integers: float64 would hide the low bits.
		h := hostSlice(&e.i64, n)
		if err = e.dev.Read(h, b); err == nil {
			if bad, first = compare(h, blockLen, pats); bad > 0 {
				got, want = h[first], pats[first/blockLen][first%blockLen%period]
			}
		}
	case device.Float16:
		h := hostSlice(&e.f16, n)
		if err = e.dev.Read(h, b); err == nil {
			for i, v := range h {
				if v == 0x8000 {
					h[i] = 0 // -0 is 0 (the patterns hold +0)
				}
			}
			ps := typedAll[uint16](b.DType(), pats)
			if bad, first = compare(h, blockLen, ps); bad > 0 {
				got, want = halfValue(h[first]), halfValue(ps[first/blockLen][first%blockLen%period])
			}
		}
	default:
		err = fmt.Errorf("no values for %v", b.DType())
	}
	switch {
	case err != nil:
		e.failf("%s: read: %v", what, err)
	case bad > 0:
		e.failf("%s: element %d is %v, want %v (%d of %d elements differ)", what, first, got, want, bad, n)
	}
}

// typedAll converts every pattern with typed.
func typedAll[T any](dt device.DType, pats [][]int64) [][]T {
	out := make([][]T, len(pats))
	for j, p := range pats {
		out[j] = typed(dt, p).([]T)
	}
	return out
}

// compare counts the elements of got that differ from the blocks of
// blockLen elements repeating pats[j], and returns the first one's index.
func compare[T comparable](got []T, blockLen int, pats [][]T) (bad, first int) {
	first = -1
	for j, pat := range pats {
		blk := got[j*blockLen : (j+1)*blockLen]
		for k := 0; k < len(blk); k += len(pat) {
			seg := blk[k:min(k+len(pat), len(blk))]
			for i, v := range seg {
				if v != pat[i] {
					if bad++; first < 0 {
						first = j*blockLen + k + i
					}
				}
			}
		}
	}
	return bad, first
}

// hostSlice returns a slice of n elements backed by *cache, which it grows
// as needed: a case reuses one host slice per type for all its transfers.
func hostSlice[T any](cache *[]T, n int) []T {
	if cap(*cache) < n {
		*cache = make([]T, n)
	}
	return (*cache)[:n]
}

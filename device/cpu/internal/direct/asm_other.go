//go:build !amd64 || noasm

package direct

// haveAsm is false: Block runs in Go.
const haveAsm = false

// haveAVX2 is false: RowChannelsLast runs in Go.
const haveAVX2 = false

func blockAVX512(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int) {
	panic("direct: no assembly on this platform")
}

func gradBlockAVX512(sums *[GradRows * GradCols]float64, dy *float32, ldy int, in *float32, offs *[GradCols]int, n int) {
	panic("direct: no assembly on this platform")
}

func depthwiseAVX512(out, in *float32, taps *int, ntaps int, w *float32, n int, bias, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func copyRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols, zero int) {
	panic("direct: no assembly on this platform")
}

func splitColumnsAVX512(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows, cols int) {
	panic("direct: no assembly on this platform")
}

func sameAVX512(out, in *float32, taps *int, ntaps int, w *float32, masks *uint16, nv4 int, bias, lo, hi float32, nv int) {
	panic("direct: no assembly on this platform")
}

func stride2AVX512(out, in *float32, ld, rows int, w *float32, masks *uint16, steps, pad int, bias, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func blockSameAVX512(out *float32, ldo int, in *float32, q0, cstride int, taps *int, ntaps int, w *float32, channels int, masks *uint16, mstride int, bias *float32, lo, hi float32, next *float32) {
	panic("direct: no assembly on this platform")
}

func blockSame1AVX512(out *float32, ldo int, in *float32, q0, cstride int, taps *int, ntaps int, w *float32, channels int, masks *uint16, mstride int, bias *float32, lo, hi float32, next *float32) {
	panic("direct: no assembly on this platform")
}

func im2colSameAVX512(col *float32, ld int, in *float32, cstride, channels int, taps *int, ntaps int, masks *uint16, nv4, nvec int, last uint16) {
	panic("direct: no assembly on this platform")
}

func mergeColumnsAVX512(dst *float32, ldd int, even *float32, lde int, odd *float32, ldo int, rows, cols, add int) {
	panic("direct: no assembly on this platform")
}

func addRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols int) {
	panic("direct: no assembly on this platform")
}

func stride2RowsAVX512(out *float32, ldo int, in *float32, ld, instep, rows int, w *float32, masks *uint16, steps, pad int, bias, lo, hi float32, nout int) {
	panic("direct: no assembly on this platform")
}

func stride2BlockAVX512(out *float32, ldo int, in *float32, ld, cstride, channels, rows int, w *float32, wstride int, masks *uint16, steps, pad int, bias *float32, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func samePlanesAVX512(out *float32, ldo int, in *float32, ldi int, taps *int, ntaps int, w *float32, ldw int, bias *float32, bstride int, masks *uint16, nv4, nv int, lo, hi float32, planes int) {
	panic("direct: no assembly on this platform")
}

func sameRowsAVX512(out *float32, ldo int, in *float32, ldi int, rowIn *int, kh, oh, w int, wts *float32, ldw int, bias *float32, bstride int, chunkMasks *uint16, chunks int, lo, hi float32, planes int) {
	panic("direct: no assembly on this platform")
}

func sameDotsImagesAVX512(acc *float64, dy *float32, ldy int, in *float32, ldi, images int, taps *int, ntaps int, masks *uint16, nv4, nv int) {
	panic("direct: no assembly on this platform")
}

func rowChannelsLastAVX512(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func blockRowsAVX512(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int, offs *int, masks *uint16, bias *float32, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func rowChannelsLastAVX2(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func depthwiseAVX2(out, in *float32, taps *int, ntaps int, w *float32, n int, bias, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func splitColumnsAVX2(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows, chunks int) {
	panic("direct: no assembly on this platform")
}

func im2colSameAVX2(col *float32, ld int, in *float32, cstride, channels int, taps *int, ntaps int, masks *uint16, nv4, groups int) {
	panic("direct: no assembly on this platform")
}

func col2imSameAVX2(dx *float32, cstride int, col *float32, ld, channels int, taps *int, ntaps int, masks *uint16, nv4, groups int) {
	panic("direct: no assembly on this platform")
}

func splitColumns8AVX2(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows int) {
	panic("direct: no assembly on this platform")
}

func addRowsAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int) {
	panic("direct: no assembly on this platform")
}

func mergeColumnsAddAVX2(dst *float32, ldd int, even *float32, lde int, odd *float32, ldo, rows, pairs int) {
	panic("direct: no assembly on this platform")
}

func blockAVX2(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels, cols int) {
	panic("direct: no assembly on this platform")
}

func gradBlockAVX2(sums *[GradRows * GradCols]float64, dy *float32, ldy int, in *float32, offs *[GradCols]int, n int) {
	panic("direct: no assembly on this platform")
}

func copyRowsAVX2(dst *float32, ldd int, src *float32, lds, rows, cols, zero int) {
	panic("direct: no assembly on this platform")
}

func copyRowsBiasClampAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int, bias, lo, hi float32) {
	panic("direct: no assembly on this platform")
}

func vecBlockAVX2(out, in *float32, pos *[VecCols]int, offs *int, k int, w *float32, add bool) {
	panic("direct: no assembly on this platform")
}

func copyRows4AVX2(dst *float32, ldd int, src *float32, lds, rows, cols, zero int) {
	panic("direct: no assembly on this platform")
}

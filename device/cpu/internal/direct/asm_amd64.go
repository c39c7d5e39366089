//go:build amd64 && !noasm

package direct

//go:generate go run gen_channelslast.go

import "golang.org/x/sys/cpu"

// haveAsm reports whether Block runs in AVX-512 assembly (asm_amd64.s).
var haveAsm = cpu.X86.HasAVX512F

// haveAVX2 reports whether the AVX2 kernels can run: those that replace
// the AVX-512 ones on CPUs without AVX-512, and SamePlan.Col2im on every
// CPU (doc.go lists them).
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func blockAVX512(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int)

//go:noescape
func gradBlockAVX512(sums *[GradRows * GradCols]float64, dy *float32, ldy int, in *float32, offs *[GradCols]int, n int)

//go:noescape
func depthwiseAVX512(out, in *float32, taps *int, ntaps int, w *float32, n int, bias, lo, hi float32)

//go:noescape
func copyRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols, zero int)

//go:noescape
func splitColumnsAVX512(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows, cols int)

//go:noescape
func sameAVX512(out, in *float32, taps *int, ntaps int, w *float32, masks *uint16, nv4 int, bias, lo, hi float32, nv int)

//go:noescape
func stride2AVX512(out, in *float32, ld, rows int, w *float32, masks *uint16, steps, pad int, bias, lo, hi float32)

//go:noescape
func blockSameAVX512(out *float32, ldo int, in *float32, q0, cstride int, taps *int, ntaps int, w *float32, channels int, masks *uint16, mstride int, bias *float32, lo, hi float32, next *float32)

//go:noescape
func blockSame1AVX512(out *float32, ldo int, in *float32, q0, cstride int, taps *int, ntaps int, w *float32, channels int, masks *uint16, mstride int, bias *float32, lo, hi float32, next *float32)

//go:noescape
func im2colSameAVX512(col *float32, ld int, in *float32, cstride, channels int, taps *int, ntaps int, masks *uint16, nv4, nvec int, last uint16)

//go:noescape
func mergeColumnsAVX512(dst *float32, ldd int, even *float32, lde int, odd *float32, ldo int, rows, cols, add int)

//go:noescape
func addRowsAVX512(dst *float32, ldd int, src *float32, lds, rows, cols int)

//go:noescape
func stride2RowsAVX512(out *float32, ldo int, in *float32, ld, instep, rows int, w *float32, masks *uint16, steps, pad int, bias, lo, hi float32, nout int)

//go:noescape
func stride2BlockAVX512(out *float32, ldo int, in *float32, ld, cstride, channels, rows int, w *float32, wstride int, masks *uint16, steps, pad int, bias *float32, lo, hi float32)

//go:noescape
func samePlanesAVX512(out *float32, ldo int, in *float32, ldi int, taps *int, ntaps int, w *float32, ldw int, bias *float32, bstride int, masks *uint16, nv4, nv int, lo, hi float32, planes int)

//go:noescape
func sameDotsImagesAVX512(acc *float64, dy *float32, ldy int, in *float32, ldi, images int, taps *int, ntaps int, masks *uint16, nv4, nv int)

//go:noescape
func rowChannelsLastAVX512(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32)

//go:noescape
func blockRowsAVX512(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels int, offs *int, masks *uint16, bias *float32, lo, hi float32)

//go:noescape
func rowChannelsLastAVX2(out, in, w, bias *float32, inOff, wOff *int, ntaps, n, inStep, ldo, channels int, lo, hi float32)

//go:noescape
func depthwiseAVX2(out, in *float32, taps *int, ntaps int, w *float32, n int, bias, lo, hi float32)

//go:noescape
func splitColumnsAVX2(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows, chunks int)

//go:noescape
func im2colSameAVX2(col *float32, ld int, in *float32, cstride, channels int, taps *int, ntaps int, masks *uint16, nv4, groups int)

//go:noescape
func col2imSameAVX2(dx *float32, cstride int, col *float32, ld, channels int, taps *int, ntaps int, masks *uint16, nv4, groups int)

//go:noescape
func splitColumns8AVX2(even *float32, lde int, odd *float32, ldo int, src *float32, lds, rows int)

//go:noescape
func addRowsAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int)

//go:noescape
func mergeColumnsAddAVX2(dst *float32, ldd int, even *float32, lde int, odd *float32, ldo, rows, pairs int)

//go:noescape
func blockAVX2(out *float32, ldo int, in *float32, cstride int, taps *int, ntaps int, w *float32, channels, cols int)

//go:noescape
func gradBlockAVX2(sums *[GradRows * GradCols]float64, dy *float32, ldy int, in *float32, offs *[GradCols]int, n int)

//go:noescape
func copyRowsAVX2(dst *float32, ldd int, src *float32, lds, rows, cols, zero int)

//go:noescape
func copyRows4AVX2(dst *float32, ldd int, src *float32, lds, rows, cols, zero int)

//go:noescape
func copyRowsBiasClampAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int, bias, lo, hi float32)

//go:noescape
func vecBlockAVX2(out, in *float32, pos *[VecCols]int, offs *int, k int, w *float32, add bool)

//go:noescape
func sameRowsAVX512(out *float32, ldo int, in *float32, ldi int, rowIn *int, kh, oh, w int, wts *float32, ldw int, bias *float32, bstride int, chunkMasks *uint16, chunks int, lo, hi float32, planes int)

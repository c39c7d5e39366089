package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/hora-dl/hora/device"
)

var (
	cublasOnce sync.Once
	cublasLib  *cublasAPI
	cublasErr  error
)

// loadCUBLAS loads cuBLAS once per process.
func loadCUBLAS() (*cublasAPI, error) {
	cublasOnce.Do(func() {
		h, path, err := OpenLibrary("cuBLAS (libcublas)", cublasNames)
		if err != nil {
			cublasErr = err
			return
		}
		a := &cublasAPI{}
		if err := bind(h, path, a.symbols()); err != nil {
			cublasErr = err
			return
		}
		cublasLib = a
	})
	return cublasLib, cublasErr
}

// blasState is a Device's cuBLAS handle, bound to its stream.
type blasState struct {
	api    *cublasAPI
	handle uintptr
	mode   int32 // the math mode last set
}

// blasHandle returns d's cuBLAS handle, creating it on first use (on the worker).
func (d *Device) blasHandle() (*blasState, error) {
	d.blasMu.Lock()
	defer d.blasMu.Unlock()
	if d.blas != nil {
		return d.blas, nil
	}
	api, err := loadCUBLAS()
	if err != nil {
		return nil, err
	}
	s := &blasState{api: api, mode: -1}
	if err := api.check("cublasCreate_v2", api.cublasCreate(&s.handle)); err != nil {
		return nil, err
	}
	if err := api.check("cublasSetStream_v2", api.cublasSetStream(s.handle, d.stream)); err != nil {
		api.cublasDestroy(s.handle)
		return nil, err
	}
	d.blas = s
	return s, nil
}

// closeBLAS destroys the handle (on the worker, from Close).
func (d *Device) closeBLAS() {
	d.blasMu.Lock()
	defer d.blasMu.Unlock()
	if d.blas != nil {
		d.blas.api.cublasDestroy(d.blas.handle)
		d.blas = nil
	}
}

// setMode sets the handle's math mode when it differs from the last one.
func (s *blasState) setMode(mode int32) error {
	if s.mode == mode {
		return nil
	}
	if err := s.api.check("cublasSetMathMode", s.api.cublasSetMathMode(s.handle, mode)); err != nil {
		return err
	}
	s.mode = mode
	return nil
}

// MatMul computes the batched product of device.MatMulParams with cuBLAS.
// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so the
// operands go to cuBLAS swapped. Float32 uses TensorFloat-32 unless the
// device's SetTF32(false), and bfloat16 inputs under SetAutocast(BFloat16).
func (k *kernels) MatMul(p device.MatMulParams, c, a, b device.Buffer) {
	cb, ab, bb := k.buf(c), k.buf(a), k.buf(b)
	if p.Batch == 0 || p.M == 0 || p.N == 0 {
		return
	}
	if p.K == 0 {
		k.scaleMatrices(p, cb)
		return
	}
	dt := cb.dt
	if dt != device.Float32 && dt != device.Float64 {
		panic(fmt.Sprintf("cuda: MatMul of %v", dt))
	}
	transB, ldb := int32(cublasOpN), int32(p.N)
	if p.TransB {
		transB, ldb = cublasOpT, int32(p.K)
	}
	transA, lda := int32(cublasOpN), int32(p.K)
	if p.TransA {
		transA, lda = cublasOpT, int32(p.M)
	}
	size := uintptr(dt.Size())
	d := k.d
	if ac := device.DType(d.autocast.Load()); dt == device.Float32 && ac != 0 {
		k.matMulAutocast(ac, p, cb, ab, bb, transA, transB, lda, ldb)
		return
	}
	tf32 := d.tf32.Load()
	d.w.post(func() {
		s, err := d.blasHandle()
		if err != nil {
			d.fail(err)
			return
		}
		m, n, kk := int32(p.N), int32(p.M), int32(p.K)
		aPtr := ab.ptr + uintptr(p.AOff)*size
		bPtr := bb.ptr + uintptr(p.BOff)*size
		cPtr := cb.ptr + uintptr(p.COff)*size
		var r int32
		if dt == device.Float32 {
			mode := int32(cublasDefaultMath)
			if tf32 {
				mode = cublasTF32TensorOpMath
			}
			if err := s.setMode(mode); err != nil {
				d.fail(err)
				return
			}
			alpha, beta := float32(p.Alpha), float32(p.Beta)
			r = s.api.cublasSgemmStridedBatched(s.handle, transB, transA, m, n, kk, &alpha,
				bPtr, ldb, int64(p.BStride), aPtr, lda, int64(p.AStride), &beta, cPtr, m, int64(p.CStride), int32(p.Batch))
			d.fail(s.api.check("cublasSgemmStridedBatched", r))
			return
		}
		alpha, beta := p.Alpha, p.Beta
		r = s.api.cublasDgemmStridedBatched(s.handle, transB, transA, m, n, kk, &alpha,
			bPtr, ldb, int64(p.BStride), aPtr, lda, int64(p.AStride), &beta, cPtr, m, int64(p.CStride), int32(p.Batch))
		d.fail(s.api.check("cublasDgemmStridedBatched", r))
	})
}

// matMulAutocast rounds the float32 operands to half-width copies
// (bfloat16 or float16, as ac says) and multiplies them with float32
// accumulation and output (autocast).
func (k *kernels) matMulAutocast(ac device.DType, p device.MatMulParams, cb, ab, bb *Buffer, transA, transB, lda, ldb int32) {
	d := k.d
	convert, ctype := "f32_to_bf16", int32(cudaR16BF)
	if ac == device.Float16 {
		convert, ctype = "f32_to_f16", cudaR16F
	}
	a16 := k.scratch(device.Float16, ab.n) // two bytes per element
	b16 := k.scratch(device.Float16, bb.n)
	if a16 == nil || b16 == nil {
		return
	}
	defer a16.Free()
	defer b16.Free()
	k.launch1D(convert, ab.n, ab, a16, int64(ab.n))
	k.launch1D(convert, bb.n, bb, b16, int64(bb.n))
	d.w.post(func() {
		s, err := d.blasHandle()
		if err != nil {
			d.fail(err)
			return
		}
		if err := s.setMode(cublasDefaultMath); err != nil {
			d.fail(err)
			return
		}
		alpha, beta := float32(p.Alpha), float32(p.Beta)
		r := s.api.cublasGemmStridedBatchedEx(s.handle, transB, transA, int32(p.N), int32(p.M), int32(p.K),
			unsafe.Pointer(&alpha),
			b16.ptr+uintptr(p.BOff)*2, ctype, ldb, int64(p.BStride),
			a16.ptr+uintptr(p.AOff)*2, ctype, lda, int64(p.AStride),
			unsafe.Pointer(&beta), cb.ptr+uintptr(p.COff)*4, cudaR32F, int32(p.N), int64(p.CStride),
			int32(p.Batch), cublasCompute32F, cublasGemmDefault)
		d.fail(s.api.check("cublasGemmStridedBatchedEx", r))
	})
}

// scaleMatrices sets each C[b] to Beta·C[b] (a product with K = 0).
func (k *kernels) scaleMatrices(p device.MatMulParams, c *Buffer) {
	mn := p.M * p.N
	for i := 0; i < p.Batch; i++ {
		view := c.view(p.COff+i*p.CStride, mn)
		if p.Beta == 0 {
			k.Fill(view, mn, 0)
		} else {
			k.Unary(device.MulScalar, view, view, mn, p.Beta)
		}
		if p.CStride == 0 {
			break
		}
	}
}

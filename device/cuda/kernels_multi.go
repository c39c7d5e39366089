package cuda

import "github.com/hora-dl/hora/device"

// multiMax is the number of tensors one multi-tensor launch takes
// (HORA_MULTI in kernels/fused.cu).
const multiMax = 32

// multiGridX caps the blocks per tensor of a multi-tensor launch: enough
// to fill a large GPU for one big tensor, without launching many idle
// blocks for the small ones beside it.
const multiGridX = 512

// multiTensorArg is the C struct MultiTensor (kernels/fused.cu).
type multiTensorArg struct {
	N, P, G, A, B [multiMax]int64
	Count         int32
	_             int32
}

// launchMulti queues kernel name over the tensors, multiMax at a time;
// a and b are the state buffers (nil entries or lists allowed), args the
// kernel's arguments after the MultiTensor.
func (k *kernels) launchMulti(name string, params, grads, a, b []device.Buffer, ns []int, args ...any) {
	ptr := func(l []device.Buffer, i int) int64 {
		if l == nil || l[i] == nil {
			return 0
		}
		return int64(k.buf(l[i]).ptr)
	}
	for start := 0; start < len(params); start += multiMax {
		var t multiTensorArg
		most := 0
		for i := start; i < min(start+multiMax, len(params)); i++ {
			j := int(t.Count)
			t.N[j], t.P[j], t.G[j], t.A[j], t.B[j] = int64(ns[i]), ptr(params, i), ptr(grads, i), ptr(a, i), ptr(b, i)
			t.Count++
			most = max(most, ns[i])
		}
		if most == 0 {
			continue
		}
		gx := min(grid1D(most), multiGridX)
		k.launch(name, [3]int{gx, int(t.Count), 1}, [3]int{blockSize, 1, 1}, 0, append([]any{t}, args...)...)
	}
}

// SGDSteps updates a group of float32 parameters with one launch per 32
// (sgd_multi_f32); it declines other types.
func (k *kernels) SGDSteps(h device.SGDHyper, params, grads, bufs []device.Buffer, ns []int) bool {
	if len(params) == 0 || params[0].DType() != device.Float32 {
		return false
	}
	flags := sgdFlags(h, false)
	if flags&sgdMomentum == 0 {
		bufs = nil
	}
	a := sgdArgs32(h, flags)
	k.launchMulti("sgd_multi_f32", params, grads, bufs, nil, ns, a.wd, a.mom, a.omd, a.neglr, a.flags)
	return true
}

// AdamSteps updates a group of float32 parameters with one launch per 32
// (adam_multi_f32); it declines other types.
func (k *kernels) AdamSteps(h device.AdamHyper, params, grads, m, v []device.Buffer, ns []int) bool {
	if len(params) == 0 || params[0].DType() != device.Float32 || h.AMSGrad {
		return false
	}
	a := adamArgs32(h)
	k.launchMulti("adam_multi_f32", params, grads, m, v, ns, a.b1, a.omb1, a.b2, a.omb2, a.bc2sqrt, a.eps, a.negstep, a.wd, a.l2)
	return true
}

var _ device.MultiStepKernels = (*kernels)(nil)

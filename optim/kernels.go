package optim

import (
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/tensor"
)

// The optimizers update a parameter in place with the kernels of its
// value's device (device.OptimizerKernels), and a parameter group with one
// call of its multi-tensor kernels (device.MultiStepKernels), when the
// device has them and the tensors suit them; otherwise Step composes the
// update from tensor operations (the optimizer's update function).

// sgdStep updates param in place with one SGD step of its device's
// kernel, using the momentum buffer buf (nil when h.Momentum is 0). It
// returns false, changing nothing, when the device has no kernel for
// these tensors.
func sgdStep(h device.SGDHyper, param, grad, buf *tensor.Tensor) bool {
	k, ok := param.Device().Kernels().(device.OptimizerKernels)
	if !ok || grad == nil || (h.Momentum != 0 && buf == nil) || !suits(param, grad, buf) {
		return false
	}
	k.SGDStep(h, param.Buffer(), grad.Buffer(), buffer(buf), param.Len())
	return true
}

// adamStep updates param in place with one Adam (or AdamW) step of its
// device's kernel, using the moment buffers m and v and, for AMSGrad,
// maxV (else nil). It returns false, changing nothing, when the device has
// no kernel for these tensors.
func adamStep(h device.AdamHyper, param, grad, m, v, maxV *tensor.Tensor) bool {
	k, ok := param.Device().Kernels().(device.OptimizerKernels)
	if !ok || grad == nil || m == nil || v == nil || (h.AMSGrad && maxV == nil) || !suits(param, grad, m, v, maxV) {
		return false
	}
	k.AdamStep(h, param.Buffer(), grad.Buffer(), m.Buffer(), v.Buffer(), buffer(maxV), param.Len())
	return true
}

// sgdSteps updates every params[i] in place with one SGD step, as sgdStep
// does, in one call of the device's multi-tensor kernel (a GPU launches
// one kernel for many parameters). bufs[i] is params[i]'s momentum buffer
// (nil without momentum). It returns false, changing nothing, when the
// device has no such kernel for these tensors.
func sgdSteps(h device.SGDHyper, params, grads, bufs []*tensor.Tensor) bool {
	mk := multiStepKernels(params, grads, bufs)
	if mk == nil {
		return false
	}
	for i := range params {
		if grads[i] == nil || (h.Momentum != 0 && bufs[i] == nil) {
			return false
		}
	}
	pb, ns := buffers(params)
	gb, _ := buffers(grads)
	bb, _ := buffers(bufs)
	return mk.SGDSteps(h, pb, gb, bb, ns)
}

// adamSteps updates every params[i] in place with one Adam (AdamW) step
// without AMSGrad, as adamStep does, in one call of the device's
// multi-tensor kernel. It returns false, changing nothing, when the device
// has no such kernel for these tensors.
func adamSteps(h device.AdamHyper, params, grads, m, v []*tensor.Tensor) bool {
	mk := multiStepKernels(params, grads, m, v)
	if mk == nil || h.AMSGrad {
		return false
	}
	for i := range params {
		if grads[i] == nil || m[i] == nil || v[i] == nil {
			return false
		}
	}
	pb, ns := buffers(params)
	gb, _ := buffers(grads)
	mb, _ := buffers(m)
	vb, _ := buffers(v)
	return mk.AdamSteps(h, pb, gb, mb, vb, ns)
}

// suits reports whether param is a dense floating-point tensor and every
// tensor of ts (nil ones aside) is dense with param's type, device and
// shape, as the optimizer kernels need.
func suits(param *tensor.Tensor, ts ...*tensor.Tensor) bool {
	if !param.DType().IsFloat() || !param.IsContiguous() {
		return false
	}
	for _, t := range ts {
		if t != nil && (!t.IsContiguous() || t.DType() != param.DType() || t.Device() != param.Device() || !t.SameShape(param)) {
			return false
		}
	}
	return true
}

// multiStepKernels returns the multi-tensor kernels of the device of
// params when it has them, every params[i] suits them with entry i of each
// list (see suits), and all params share one type and device; else nil.
func multiStepKernels(params []*tensor.Tensor, lists ...[]*tensor.Tensor) device.MultiStepKernels {
	if len(params) == 0 {
		return nil
	}
	p0 := params[0]
	mk, ok := p0.Device().Kernels().(device.MultiStepKernels)
	if !ok {
		return nil
	}
	for i, p := range params {
		if p.DType() != p0.DType() || p.Device() != p0.Device() {
			return nil
		}
		for _, list := range lists {
			if len(list) != len(params) || !suits(p, list[i]) {
				return nil
			}
		}
	}
	return mk
}

// buffer returns t's buffer, or nil for a nil tensor.
func buffer(t *tensor.Tensor) device.Buffer {
	if t == nil {
		return nil
	}
	return t.Buffer()
}

// buffers returns the buffers of ts and their element counts (nil and 0
// for a nil tensor).
func buffers(ts []*tensor.Tensor) ([]device.Buffer, []int) {
	bs, ns := make([]device.Buffer, len(ts)), make([]int, len(ts))
	for i, t := range ts {
		if t != nil {
			bs[i], ns[i] = t.Buffer(), t.Len()
		}
	}
	return bs, ns
}

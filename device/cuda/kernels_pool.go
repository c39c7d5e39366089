package cuda

import "github.com/hora-dl/hora/device"

// poolArg is the C struct PoolShape (kernels/common.cuh).
type poolArg struct {
	N, C, H, W     int32
	KH, KW         int32
	SH, SW, PH, PW int32
	OH, OW         int32
	CountPad       int32
	_              int32
}

func newPoolArg(p device.PoolParams) poolArg {
	a := poolArg{
		N: int32(p.N), C: int32(p.C), H: int32(p.H), W: int32(p.W),
		KH: int32(p.KH), KW: int32(p.KW),
		SH: int32(p.StrideH), SW: int32(p.StrideW), PH: int32(p.PadH), PW: int32(p.PadW),
		OH: int32(p.OutH()), OW: int32(p.OutW()),
	}
	if p.CountPad {
		a.CountPad = 1
	}
	return a
}

// MaxPool2D writes the maxima of the windows to y and their flat
// positions within each H×W plane to the Int64 argmax (maxpool_<type> of
// kernels/pool.cu).
func (k *kernels) MaxPool2D(p device.PoolParams, y, argmax, x device.Buffer) {
	sfx := floatSuffix("MaxPool2D", y)
	noHalf("MaxPool2D", argmax, x)
	k.launch1D("maxpool_"+sfx, p.N*p.C*p.OutH()*p.OutW(), y, argmax, x, newPoolArg(p))
}

// MaxPool2DValues writes the maxima of MaxPool2D without their positions.
func (k *kernels) MaxPool2DValues(p device.PoolParams, y, x device.Buffer) {
	sfx := floatSuffix("MaxPool2DValues", y)
	noHalf("MaxPool2DValues", x)
	k.launch1D("maxpool_"+sfx, p.N*p.C*p.OutH()*p.OutW(), y, nil, x, newPoolArg(p))
}

// MaxPool2DGrad sets dx to the sum of the dy whose maximum each input
// element was (maxpool_grad_<type>, a thread per input element).
func (k *kernels) MaxPool2DGrad(p device.PoolParams, dx, dy, argmax device.Buffer) {
	sfx := floatSuffix("MaxPool2DGrad", dx)
	noHalf("MaxPool2DGrad", dy, argmax)
	k.launch1D("maxpool_grad_"+sfx, p.N*p.C*p.H*p.W, dx, dy, argmax, newPoolArg(p))
}

// AvgPool2D averages each window (avgpool_<type>).
func (k *kernels) AvgPool2D(p device.PoolParams, y, x device.Buffer) {
	sfx := floatSuffix("AvgPool2D", y)
	noHalf("AvgPool2D", x)
	k.launch1D("avgpool_"+sfx, p.N*p.C*p.OutH()*p.OutW(), y, x, newPoolArg(p))
}

// AvgPool2DGrad spreads dy evenly back over each window into dx
// (avgpool_grad_<type>, a thread per input element).
func (k *kernels) AvgPool2DGrad(p device.PoolParams, dx, dy device.Buffer) {
	sfx := floatSuffix("AvgPool2DGrad", dx)
	noHalf("AvgPool2DGrad", dy)
	k.launch1D("avgpool_grad_"+sfx, p.N*p.C*p.H*p.W, dx, dy, newPoolArg(p))
}

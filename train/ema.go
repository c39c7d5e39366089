package train

import (
	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/tensor"
)

// emaWeights is an exponential moving average of a model's parameters:
// after each optimizer step, avg ← avg + (1 − decay)·(param − avg).
// Buffers (BatchNorm's running statistics) are not averaged: the model's
// own are used with the averaged weights, as timm's ModelEma does for
// them.
type emaWeights struct {
	decay  float64
	params []*autograd.Param
	avg    []*tensor.Tensor
}

// newEMA starts the average at the parameters' current values.
func newEMA(params []*autograd.Param, decay float64) *emaWeights {
	e := &emaWeights{decay: decay, params: params, avg: make([]*tensor.Tensor, len(params))}
	for i, p := range params {
		e.avg[i] = p.Value.Clone()
	}
	return e
}

// update moves the average towards the parameters.
func (e *emaWeights) update() {
	for i, p := range e.params {
		e.avg[i].AddInPlace(p.Value.Sub(e.avg[i]).MulScalar(1 - e.decay))
	}
}

// swap exchanges the parameters' values with the averages: call it
// before and after evaluating or saving with the averaged weights.
func (e *emaWeights) swap() {
	for i, p := range e.params {
		p.Value, e.avg[i] = e.avg[i], p.Value
	}
}

// stateDict returns the averages by parameter name (the tensors
// themselves: LoadInto restores them in place).
func (e *emaWeights) stateDict() map[string]*tensor.Tensor {
	sd := make(map[string]*tensor.Tensor, len(e.params))
	for i, p := range e.params {
		sd[p.Name] = e.avg[i]
	}
	return sd
}

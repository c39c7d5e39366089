package autograd

import "github.com/hora-dl/hora/tensor"

// IndexAdd returns a copy of x with the slices of src added at the
// positions in the 1-D Int64 idx along axis (tensor.Tensor.IndexAdd):
// out[…, idx[j], …] += src[…, j, …], repeated positions accumulating.
// The gradient flows to x unchanged and to src as the gradient's slices
// at idx. It records OpInfo.Name "IndexAdd" with IndexAttrs.
func IndexAdd(x *Var, axis int, idx *tensor.Tensor, src *Var) *Var {
	return describeOp(record(x.Value.IndexAdd(axis, idx, src.Value), func(g *tensor.Tensor, needs []bool) []*tensor.Tensor {
		return []*tensor.Tensor{when(needs[0], func() *tensor.Tensor { return g }),
			when(needs[1], func() *tensor.Tensor { return g.IndexSelect(axis, idx) })}
	}, x, src), "IndexAdd", IndexAttrs{opAxis(axis, x.Value.Rank()), idx})
}

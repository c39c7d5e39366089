package onnx

import (
	"math"
	"math/rand/v2"

	"github.com/hora-dl/hora/autograd"
	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/onnx/onnxpb"
	"github.com/hora-dl/hora/tensor"
)

// The random generators and the window functions. The generators draw
// from the model's generator (Model.SetSeed), or, when the node sets the
// seed attribute, from a generator seeded with it afresh on every run, so
// that such a node gives the same values each time. Their values cannot
// match another runtime's draws; their shapes, types and distributions
// do. None of them is differentiable.

func init() {
	register("RandomUniform", 1, false, opRandom(false, false))
	register("RandomNormal", 1, false, opRandom(true, false))
	register("RandomUniformLike", 1, false, opRandom(false, true))
	register("RandomNormalLike", 1, false, opRandom(true, true))
	register("Bernoulli", 15, false, opBernoulli)
	register("Multinomial", 7, false, opMultinomial)
	register("HannWindow", 17, false, opWindow([]float64{0.5, 0.5}))
	register("HammingWindow", 17, false, opWindow([]float64{25.0 / 46, 21.0 / 46}))
	register("BlackmanWindow", 17, false, opWindow([]float64{0.42, 0.5, 0.08}))
}

// nodeRand returns the generator a random node draws from.
func nodeRand(c *nodeCtx) *rand.Rand {
	if c.HasAttr("seed") {
		seed := math.Float64bits(c.AttrFloat("seed", 0))
		return rand.New(rand.NewPCG(seed, 0x5eed))
	}
	if c.Rand() == nil {
		return rand.New(rand.NewPCG(0, 0))
	}
	return c.Rand()
}

// floatType returns the Hora type of the dtype attribute (def when
// absent), which must be a float type.
func floatType(c *nodeCtx, name string, def DataType) (device.DType, error) {
	dt := DataType(c.AttrInt(name, int64(def)))
	switch dt {
	case onnxpb.TensorProto_FLOAT:
		return device.Float32, nil
	case onnxpb.TensorProto_DOUBLE:
		return device.Float64, nil
	}
	if _, err := hostType(dt); err != nil {
		return 0, err
	}
	return 0, c.Errorf("attribute %s is %s, expected float or double", name, typeName(dt))
}

// opRandom is RandomUniform(Like) and RandomNormal(Like): a tensor of the
// shape attribute (or of the input's shape) of low..high uniform or
// mean, scale normal values.
func opRandom(normal, like bool) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		var shape []int
		def := onnxpb.TensorProto_FLOAT
		if like {
			x, err := c.input("input")
			if err != nil {
				return nil, err
			}
			shape = x.Shape()
			def = protoTypeOf(x.Value.DType())
		} else {
			if _, err := c.inputs(); err != nil {
				return nil, err
			}
			if !c.HasAttr("shape") {
				return nil, c.Errorf("attribute shape is required")
			}
			for _, d := range c.AttrInts("shape", nil) {
				if d < 0 || d > math.MaxInt32 {
					return nil, c.Errorf("attribute shape %v has the bad dimension %d", c.AttrInts("shape", nil), d)
				}
				shape = append(shape, int(d))
			}
		}
		if err := c.checkElements(shape); err != nil {
			return nil, err
		}
		dt, err := floatType(c, "dtype", def)
		if err != nil {
			return nil, err
		}
		rng := nodeRand(c)
		var t *tensor.Tensor
		if normal {
			t = tensor.RandNormal(rng, c.AttrFloat("mean", 0), c.AttrFloat("scale", 1), shape...)
		} else {
			t = tensor.RandUniform(rng, c.AttrFloat("low", 0), c.AttrFloat("high", 1), shape...)
		}
		return []*autograd.Var{c.Const(t.Cast(dt))}, nil
	}
}

// opBernoulli draws 1 with the probability the input gives, else 0.
func opBernoulli(c *nodeCtx) ([]*autograd.Var, error) {
	p, err := c.input("input")
	if err != nil {
		return nil, err
	}
	if !p.Value.DType().IsFloat() {
		return nil, c.Errorf("input must be float or double, found %v", p.Value.DType())
	}
	rng := nodeRand(c)
	probs := c.Floats(p)
	out := make([]float64, len(probs))
	for i, q := range probs {
		if q < 0 || q > 1 || math.IsNaN(q) {
			return nil, c.Errorf("input holds %v at %d, not a probability in [0, 1]", q, i)
		}
		if rng.Float64() < q {
			out[i] = 1
		}
	}
	t := tensor.FromFloat64(out, p.Shape()...)
	dt := DataType(c.AttrInt("dtype", int64(protoTypeOf(p.Value.DType()))))
	ht, err := hostType(dt)
	if err != nil {
		return nil, err
	}
	return []*autograd.Var{c.Const(t.Cast(ht))}, nil
}

// opMultinomial draws sample_size class indices per row of the input's
// unnormalized log-probabilities [batch, classes].
func opMultinomial(c *nodeCtx) ([]*autograd.Var, error) {
	x, err := c.input("input")
	if err != nil {
		return nil, err
	}
	if s := x.Shape(); len(s) != 2 || s[1] < 1 || !x.Value.DType().IsFloat() {
		return nil, c.Errorf("input must be float [batch, classes], found %v %v", x.Value.DType(), s)
	}
	n := c.AttrInt("sample_size", 1)
	if n < 1 || n > math.MaxInt32 {
		return nil, c.Errorf("attribute sample_size = %d, expected at least 1", n)
	}
	if _, err := hostType(DataType(c.AttrInt("dtype", int64(onnxpb.TensorProto_INT32)))); err != nil {
		return nil, err
	}
	batch, classes := x.Value.Dim(0), x.Value.Dim(1)
	if err := c.checkElements([]int{batch, int(n)}); err != nil {
		return nil, err
	}
	rng := nodeRand(c)
	logits := c.Floats(x)
	out := make([]int64, 0, batch*int(n))
	cdf := make([]float64, classes)
	for b := range batch {
		row := logits[b*classes : (b+1)*classes]
		top := math.Inf(-1)
		for _, v := range row {
			top = max(top, v)
		}
		sum := 0.0
		for k, v := range row {
			sum += math.Exp(v - top)
			cdf[k] = sum
		}
		for range n {
			u := rng.Float64() * sum
			k := 0
			for k < classes-1 && cdf[k] <= u {
				k++
			}
			out = append(out, int64(k))
		}
	}
	return []*autograd.Var{c.ConstInts(out, batch, int(n))}, nil
}

// opWindow is HannWindow, HammingWindow or BlackmanWindow: the size
// values Σ_k (-1)^k a[k]·cos(2πkn/N) for n < size, with N = size
// (periodic, the default) or size-1 (symmetric).
func opWindow(a []float64) opFunc {
	return func(c *nodeCtx) ([]*autograd.Var, error) {
		sizeIn, err := c.input("size")
		if err != nil {
			return nil, err
		}
		if sizeIn.Value.Len() != 1 {
			return nil, c.Errorf("input size must be a scalar")
		}
		size := c.Ints(sizeIn)[0]
		if size < 0 || size > int64(maxOutputElements) {
			return nil, c.Errorf("input size is %d", size)
		}
		dt, err := hostType(DataType(c.AttrInt("output_datatype", int64(onnxpb.TensorProto_FLOAT))))
		if err != nil {
			return nil, err
		}
		n := float64(size)
		if c.AttrInt("periodic", 1) == 0 {
			n--
		}
		out := make([]float64, size)
		for i := range out {
			if n == 0 { // a symmetric window of one value
				out[i] = 1
				continue
			}
			v := 0.0
			for k, ak := range a {
				term := ak * math.Cos(2*math.Pi*float64(k*i)/n)
				if k%2 == 1 {
					term = -term
				}
				v += term
			}
			out[i] = v
		}
		return []*autograd.Var{c.Const(tensor.FromFloat64(out, int(size)).Cast(dt))}, nil
	}
}

package onnx

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// issueOperators are the operators the importer must support (everything
// PyTorch exports for CNNs, MLPs, RNNs and transformer encoders).
const issueOperators = `Conv ConvTranspose Gemm MatMul Add Sub Mul Div Pow Sqrt Exp Log Neg Abs
Reciprocal Erf Relu LeakyRelu PRelu Elu Selu Sigmoid HardSigmoid HardSwish Tanh Softplus Softmax
LogSoftmax Clip BatchNormalization InstanceNormalization LayerNormalization MaxPool AveragePool
GlobalAveragePool GlobalMaxPool Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice
Gather Shape Size Constant ConstantOfShape Expand Tile Where Equal Less Greater Not And Or Cast
Identity Dropout Pad Resize Upsample ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ArgMax
ArgMin Range CumSum Einsum LSTM GRU TopK OneHot`

func TestRequiredOperatorsAreRegistered(t *testing.T) {
	differentiable := map[string]bool{}
	for _, s := range SupportedOps() {
		differentiable[s.Op] = s.Differentiable
	}
	for _, op := range strings.Fields(issueOperators) {
		_, ok := lookup(op, MaxOpset)
		if !assert.True(t, ok, "%s is not registered for opset %d", op, MaxOpset) {
			continue
		}
		if op == "Conv" || op == "Gemm" || op == "LSTM" || op == "Softmax" || op == "BatchNormalization" {
			assert.True(t, differentiable[op], "%s must be trainable", op)
		}
	}
}

// Package models is Hora's model zoo: ready-made networks built from the
// layers package.
//
// # Overview
//
// NewMLP builds a multi-layer perceptron of any widths, NewLeNet5 the
// classic LeNet-5 and NewCNN the small two-convolution network used for
// Fashion-MNIST. NewResNet builds residual networks in torchvision's
// layout (ResNet18Config, ResNet34Config, ResNet50Config and the CIFAR
// family ResNet20Config, ResNet56Config, or any depth and width),
// NewMobileNet a depthwise-separable CNN, NewTransformerClassifier a
// Vision-Transformer-style classifier of image patches, and NewCharLM a
// decoder-only character-level Transformer language model whose Generate
// samples text with a temperature and top-k. Every constructor takes a
// seeded *rand.Rand so the same seed gives the same initial weights:
//
//	rng := rand.New(rand.NewPCG(1, 1))
//	net := models.NewCNN(10, rng)
//	logits := net.Forward(autograd.Constant(images)) // images: N×1×28×28
//
// Parameter names follow the PyTorch equivalents ("features.0.weight",
// "classifier.1.bias"; an MLP is a plain Sequential: "1.weight"), so state
// dicts move between the two.
package models

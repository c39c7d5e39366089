// Package interop holds what tests need to check Hora against other
// frameworks on this machine: Debian's Python with PyTorch (Python),
// torchvision's networks exported to ONNX (TorchvisionModels), and
// onnxruntime, run through Node by scripts/ort/run.js (ORTScript, RunORT).
// Each helper skips the test, saying what to install, when its tool is
// missing. Only tests import this package.
package interop

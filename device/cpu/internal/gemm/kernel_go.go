package gemm

// goKernelInfo describes the pure-Go 4×4 micro-kernel, available on every
// platform: it is the only one without assembly, and tests can select it
// everywhere.
func goKernelInfo() *kernelInfo {
	return &kernelInfo{
		name: "go", mr: 4, nr: 4,
		kc: 256, mc: 4096, nc: 256,
		fn:    kernelGo,
		trans: packTrans,
	}
}

// kernelGo is the portable micro-kernel: with Ã the packed kc×4 micro-panel
// of op(A) in a and B̃ the packed kc×4 micro-panel of op(B) in b, it sets the
// 4×4 tile at the start of c (row stride ldc) to alpha*Ã·B̃ + beta*C, not
// reading C when beta == 0. The 16 sums live in local variables: with the
// 8 operands of a k step they fit the 32 FP registers of arm64, where this
// kernel matters most (amd64, with 16, spills some; about 4 GFLOP/s on
// Zen 5).
func kernelGo(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	a = a[:4*kc]
	b = b[:4*kc]
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var c20, c21, c22, c23 float32
	var c30, c31, c32, c33 float32
	for len(a) >= 4 && len(b) >= 4 {
		a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
		a = a[4:]
		b = b[4:]
	}
	storeRow4(c[0*ldc:], c00, c01, c02, c03, alpha, beta)
	storeRow4(c[1*ldc:], c10, c11, c12, c13, alpha, beta)
	storeRow4(c[2*ldc:], c20, c21, c22, c23, alpha, beta)
	storeRow4(c[3*ldc:], c30, c31, c32, c33, alpha, beta)
}

// storeRow4 writes alpha*(x0..x3) + beta*c[0:4] to c[0:4], not reading c
// when beta == 0. The conversions round both products (they forbid fusing
// them into an FMA), as writeTile does.
func storeRow4(c []float32, x0, x1, x2, x3, alpha, beta float32) {
	c = c[:4]
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*x0, alpha*x1, alpha*x2, alpha*x3
		return
	}
	c[0] = float32(alpha*x0) + float32(beta*c[0])
	c[1] = float32(alpha*x1) + float32(beta*c[1])
	c[2] = float32(alpha*x2) + float32(beta*c[2])
	c[3] = float32(alpha*x3) + float32(beta*c[3])
}

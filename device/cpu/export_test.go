package cpu

// Float32ByBLAS reports whether d sends some float32 products to a BLAS
// library (whose results may depend on how a product is split).
func Float32ByBLAS(d *Device) bool {
	g := d.gemmBackend()
	return g.lib != nil && !g.choice.NoBLAS()
}

package direct

import "fmt"

// RowChannelsLast computes n output positions of a depthwise convolution
// whose images are in channels-last order (each position's channels side
// by side): for positions j < n and channels c < channels,
//
//	out[j·ldo + c] = min(max(Σ_t w[wOff[t] + c]·in[inOff[t] + j·inStep + c] + bias[c], lo), hi)
//
// where t runs over the taps in order, from zero: the caller lists only
// the taps that fall inside the image for all n positions (a row's
// interior, or its first or last few positions), so that no load needs a
// mask; a tap in the padding would add a zero product. Every 16 channels
// are one vector, so a position costs one multiply-add per tap for 16
// channels, whatever the plane's width. bias has at least channels
// values; lo, hi = ±Inf for no clamp, 0 and +Inf for ReLU, 0 and 6 for
// ReLU6 (NaN stays NaN). It panics if a slice is too short.
func RowChannelsLast(out []float32, ldo int, in []float32, inStep int, w, bias []float32, inOff, wOff []int, n, channels int, lo, hi float32) {
	if n <= 0 || channels <= 0 {
		return
	}
	if len(inOff) != len(wOff) || len(bias) < channels || len(out) < (n-1)*ldo+channels {
		panic(fmt.Sprintf("direct: RowChannelsLast of %d positions of %d channels (%d apart): %d and %d tap offsets, %d biases, %d outputs",
			n, channels, ldo, len(inOff), len(wOff), len(bias), len(out)))
	}
	for t := range inOff {
		if inOff[t] < 0 || inOff[t]+(n-1)*inStep+channels > len(in) || wOff[t] < 0 || wOff[t]+channels > len(w) {
			panic(fmt.Sprintf("direct: RowChannelsLast tap %d at input %d (positions %d apart, %d of them) and weight %d: %d inputs, %d weights",
				t, inOff[t], inStep, n, wOff[t], len(in), len(w)))
		}
	}
	if len(inOff) == 0 {
		for j := range n {
			for c := range channels {
				out[j*ldo+c] = clamp(bias[c], lo, hi)
			}
		}
		return
	}
	if haveAsm {
		rowChannelsLastAVX512(&out[0], &in[0], &w[0], &bias[0], &inOff[0], &wOff[0], len(inOff), n, inStep, ldo, channels, lo, hi)
		return
	}
	c0 := 0 // the first channel left to Go
	if haveAVX2 && channels >= 8 {
		c0 = channels &^ 7
		rowChannelsLastAVX2(&out[0], &in[0], &w[0], &bias[0], &inOff[0], &wOff[0], len(inOff), n, inStep, ldo, c0, lo, hi)
	}
	for j := range n {
		o := out[j*ldo : j*ldo+channels]
		x := in[j*inStep:]
		for c := c0; c < channels; c++ {
			var sum float32
			for t, off := range inOff {
				sum += w[wOff[t]+c] * x[off+c]
			}
			o[c] = clamp(sum+bias[c], lo, hi)
		}
	}
}

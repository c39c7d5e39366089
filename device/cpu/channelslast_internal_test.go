package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hora-dl/hora/device"
)

// toChannelsLast returns the N×C×H×W images x (hw positions each) in
// channels-last order (N×H×W×C), and fromChannelsLast the inverse.
func toChannelsLast(x []float32, n, c, hw int) []float32   { return reorder(x, n, c, hw, true) }
func fromChannelsLast(x []float32, n, c, hw int) []float32 { return reorder(x, n, c, hw, false) }

func reorder(x []float32, n, c, hw int, toCL bool) []float32 {
	out := make([]float32, len(x))
	for i := range n {
		for ch := range c {
			for q := range hw {
				planes, cl := (i*c+ch)*hw+q, (i*hw+q)*c+ch
				if toCL {
					out[cl] = x[planes]
				} else {
					out[planes] = x[cl]
				}
			}
		}
	}
	return out
}

// TestConv2DChannelsLast checks Conv2DChannelsLast against the N×C×H×W
// convolution (conv2dBiasAct) on the same values, within float32
// rounding: depthwise layers (stride 1 and 2, 3×3 and 5×5, dilation,
// channels that are not a multiple of 16, planes of one row), 1×1 layers
// from channels-last order into both orders, and one-group layers from
// planes into channels-last order (a stem: 3 channels, 3×3, stride 2), at
// batch 1 and 3, with and without bias, residual and activation, constant
// weights or not, on one and two workers; depthwise layers of random
// geometry (strides, paddings, dilations, kernels up to 5×5); and that
// ChannelsLastConv refuses what it does not compute.
func TestConv2DChannelsLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	type layout struct{ in, out bool }
	cases := []struct {
		p    device.ConvParams
		lays []layout
	}{
		{convCase(1, 32, 14, 14, 32, 3, 1, 1, 32), []layout{{true, true}}},
		{convCase(3, 24, 9, 7, 24, 3, 2, 1, 24), []layout{{true, true}}},
		{convCase(1, 40, 7, 7, 40, 5, 1, 2, 40), []layout{{true, true}}},
		{convCase(2, 17, 1, 9, 17, 3, 1, 1, 17), []layout{{true, true}}},
		{device.ConvParams{N: 1, C: 20, H: 11, W: 10, OutC: 20, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 2, DilH: 2, DilW: 2, Groups: 20}, []layout{{true, true}}},
		{convCase(1, 64, 7, 7, 160, 1, 1, 0, 1), []layout{{true, true}, {true, false}, {false, true}}},
		{convCase(3, 24, 5, 6, 40, 1, 1, 0, 1), []layout{{true, true}, {true, false}, {false, true}}},
		{convCase(1, 3, 16, 16, 32, 3, 2, 1, 1), []layout{{false, true}}},
		{convCase(2, 8, 9, 9, 24, 3, 1, 1, 1), []layout{{false, true}}},
	}
	for _, threads := range []int{1, 2} {
		dev := New()
		dev.SetThreads(threads)
		ck := dev.Kernels().(device.ChannelsLastConvKernels)
		for _, c := range cases {
			s := newConvShape(c.p)
			for _, lay := range c.lays {
				for _, variant := range []struct {
					bias, res, constant bool
					act                 device.Activation
				}{{false, false, false, device.ActNone}, {true, false, true, device.ActReLU6}, {true, true, true, device.ActReLU}, {false, true, false, device.ActNone}} {
					name := fmt.Sprintf("%d/%+v/in%v-out%v/%+v", threads, c.p, lay.in, lay.out, variant)
					x := randVals[float32](rng, s.N*s.imgIn, -1, 1)
					w := randVals[float32](rng, s.OutC*s.ckk, -1, 1)
					var bias, res []float32
					if variant.bias {
						bias = randVals[float32](rng, s.OutC, -1, 1)
					}
					if variant.res {
						res = randVals[float32](rng, s.N*s.imgOut, -1, 1)
					}
					want := make([]float32, s.N*s.imgOut)
					conv2dBiasAct(dev, s, variant.act, want, x, w, bias, res, nil)

					wb := dev.bufferOf(w)
					if variant.constant {
						dev.MarkConstant(wb)
					}
					if !ck.ChannelsLastConv(c.p, wb, lay.in, lay.out) {
						t.Fatalf("%s: ChannelsLastConv refuses it", name)
					}
					xin, rin := x, res
					if lay.in {
						xin = toChannelsLast(x, s.N, s.C, s.inPlane)
					}
					if lay.out && res != nil {
						rin = toChannelsLast(res, s.N, s.OutC, s.l)
					}
					y := make([]float32, s.N*s.imgOut)
					var bb, rb device.Buffer
					if bias != nil {
						bb = dev.bufferOf(bias)
					}
					if rin != nil {
						rb = dev.bufferOf(rin)
					}
					for range 2 { // the second time from the kept forms
						ck.Conv2DChannelsLast(c.p, lay.in, lay.out, variant.act, dev.bufferOf(y), dev.bufferOf(xin), wb, bb, rb)
					}
					got := y
					if lay.out {
						got = fromChannelsLast(y, s.N, s.OutC, s.l)
					}
					for i := range want {
						if d := math.Abs(float64(got[i] - want[i])); d > 2e-6*float64(s.ckk) || math.IsNaN(float64(got[i])) {
							t.Fatalf("%s: output %d: got %v, want %v", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	// Random geometries: strides, paddings, dilations and kernels that
	// put taps outside the image on every side.
	dev1 := New()
	ck1 := dev1.Kernels().(device.ChannelsLastConvKernels)
	for i := range 200 {
		kh, kw := 1+rng.IntN(5), 1+rng.IntN(5)
		p := device.ConvParams{N: 1 + rng.IntN(2), C: 2 + rng.IntN(40), H: 1 + rng.IntN(9), W: 1 + rng.IntN(9), KH: kh, KW: kw,
			StrideH: 1 + rng.IntN(3), StrideW: 1 + rng.IntN(3), PadH: rng.IntN(4), PadW: rng.IntN(4), DilH: 1 + rng.IntN(2), DilW: 1 + rng.IntN(2)}
		p.OutC, p.Groups = p.C, p.C
		if p.DilH*(kh-1)+1 > p.H+2*p.PadH || p.DilW*(kw-1)+1 > p.W+2*p.PadW {
			continue
		}
		s := newConvShape(p)
		if s.l > maxChannelsLastPlane {
			continue
		}
		x := randVals[float32](rng, s.N*s.imgIn, -1, 1)
		w := randVals[float32](rng, s.OutC*s.ckk, -1, 1)
		bias := randVals[float32](rng, s.OutC, -1, 1)
		want := make([]float32, s.N*s.imgOut)
		conv2dBiasAct(dev1, s, device.ActReLU, want, x, w, bias, nil, nil)
		y := make([]float32, s.N*s.imgOut)
		ck1.Conv2DChannelsLast(p, true, true, device.ActReLU, dev1.bufferOf(y), dev1.bufferOf(toChannelsLast(x, s.N, s.C, s.inPlane)),
			dev1.bufferOf(w), dev1.bufferOf(bias), nil)
		got := fromChannelsLast(y, s.N, s.OutC, s.l)
		for j := range want {
			if d := math.Abs(float64(got[j] - want[j])); d > 1e-5*float64(s.ckk) {
				t.Fatalf("random case %d, %+v: output %d: got %v, want %v", i, p, j, got[j], want[j])
			}
		}
	}

	refused := []struct {
		p       device.ConvParams
		in, out bool
	}{
		{convCase(1, 8, 7, 7, 8, 3, 1, 1, 8), false, true},  // depthwise from planes
		{convCase(1, 8, 7, 7, 8, 3, 1, 1, 8), true, false},  // depthwise into planes
		{convCase(1, 8, 7, 7, 16, 3, 1, 1, 1), true, true},  // 3×3 from channels-last order
		{convCase(1, 8, 7, 7, 16, 1, 2, 0, 1), true, true},  // 1×1 with stride 2
		{convCase(1, 8, 7, 7, 16, 3, 1, 1, 2), false, true}, // two groups
		{convCase(1, 8, 7, 7, 16, 1, 1, 0, 1), false, false},
		{convCase(1, 8, 14, 14, 8, 7, 1, 3, 8), true, true}, // 49 taps
	}
	dev := New()
	ck := dev.Kernels().(device.ChannelsLastConvKernels)
	for _, r := range refused {
		s := newConvShape(r.p)
		if ck.ChannelsLastConv(r.p, dev.bufferOf(make([]float32, s.OutC*s.ckk)), r.in, r.out) {
			t.Errorf("ChannelsLastConv takes %+v with input channels-last %v, output %v", r.p, r.in, r.out)
		}
	}
	f64 := &Buffer{dev: dev, dt: device.Float64, f64: make([]float64, 9)}
	if ck.ChannelsLastConv(convCase(1, 1, 4, 4, 1, 3, 1, 1, 1), f64, false, true) {
		t.Error("ChannelsLastConv takes float64 weights")
	}
}

// BenchmarkDepthwiseChannelsLast times MobileNetV2's depthwise layers
// into planes of up to maxChannelsLastPlane positions at batch 1 in
// channels-last order, next to BenchmarkDepthwise's planes.
func BenchmarkDepthwiseChannelsLast(b *testing.B) {
	dev := New()
	rng := rand.New(rand.NewPCG(5, 6))
	ck := dev.Kernels().(device.ChannelsLastConvKernels)
	for _, c := range []struct {
		name string
		p    device.ConvParams
	}{
		{"28x28x192-s2", depthwiseParams(1, 192, 28, 28, 3, 2, 1, 1)},
		{"14x14x384-s1", depthwiseParams(1, 384, 14, 14, 3, 1, 1, 1)},
		{"14x14x576-s2", depthwiseParams(1, 576, 14, 14, 3, 2, 1, 1)},
		{"7x7x960-s1", depthwiseParams(1, 960, 7, 7, 3, 1, 1, 1)},
		{"14x14x384-s1-b32", depthwiseParams(32, 384, 14, 14, 3, 1, 1, 1)},
		{"14x14x576-s1-b32", depthwiseParams(32, 576, 14, 14, 3, 1, 1, 1)},
		{"7x7x960-s1-b32", depthwiseParams(32, 960, 7, 7, 3, 1, 1, 1)},
	} {
		s := newConvShape(c.p)
		x := dev.bufferOf(randVals[float32](rng, s.N*s.imgIn, -1, 1))
		wb := dev.bufferOf(randVals[float32](rng, s.OutC*9, -1, 1))
		dev.MarkConstant(wb)
		bias := dev.bufferOf(randVals[float32](rng, s.OutC, -1, 1))
		y := dev.bufferOf(make([]float32, s.N*s.imgOut))
		flop := float64(2 * s.N * s.imgOut * 9)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				ck.Conv2DChannelsLast(c.p, true, true, device.ActReLU6, y, x, wb, bias, nil)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(float64(4*s.N*(s.imgIn+s.imgOut))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

package vec

import (
	"fmt"
	"math"
	"testing"
)

// The benchmarks time each function on 4096 elements (in L1/L2) and on 4Mi
// elements (in memory) with every available kernel, next to "plain": the
// straightforward Go loop of the function's reference (what one writes
// without this package). GB/s counts the bytes each call reads and writes;
// Gelem/s the elements of its main operand.
//
//	go test -run '^$' -bench . -benchtime 200ms ./device/cpu/internal/vec/

var benchSizes = []int{4096, 4 << 20}

// benchFn runs plain and fast (built for n elements; bpe bytes read+written
// per element) for every size and kernel.
func benchFn(b *testing.B, bpe float64, plain, fast func(n int) func()) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.Run("plain", func(b *testing.B) { measure(b, n, bpe, plain(n)) })
			for _, k := range Kernels() {
				b.Run(k, func(b *testing.B) {
					prev, _ := SetKernel(k)
					defer SetKernel(prev)
					measure(b, n, bpe, fast(n))
				})
			}
		})
	}
}

func measure(b *testing.B, n int, bpe float64, f func()) {
	f()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f()
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(n)*bpe*float64(b.N)/s/1e9, "GB/s")
	b.ReportMetric(float64(n)*float64(b.N)/s/1e9, "Gelem/s")
}

func benchData(n int, k int) [][]float32 {
	r := rng(uint64(n + k))
	out := make([][]float32, k)
	for i := range out {
		out[i] = make([]float32, n)
		for j := range out[i] {
			out[i][j] = float32(r.Float64()*2-1) + 0.001
		}
	}
	return out
}

func BenchmarkAdd(b *testing.B) {
	benchFn(b, 12, func(n int) func() {
		d := benchData(n, 3)
		dst, x, y := d[0], d[1], d[2]
		return func() {
			for i := range dst {
				dst[i] = x[i] + y[i]
			}
		}
	}, func(n int) func() {
		d := benchData(n, 3)
		return func() { Add(d[0], d[1], d[2]) }
	})
}

func BenchmarkMul(b *testing.B) {
	benchFn(b, 12, func(n int) func() {
		d := benchData(n, 3)
		dst, x, y := d[0], d[1], d[2]
		return func() {
			for i := range dst {
				dst[i] = x[i] * y[i]
			}
		}
	}, func(n int) func() {
		d := benchData(n, 3)
		return func() { Mul(d[0], d[1], d[2]) }
	})
}

func BenchmarkDiv(b *testing.B) {
	benchFn(b, 12, func(n int) func() {
		d := benchData(n, 3)
		dst, x, y := d[0], d[1], d[2]
		return func() {
			for i := range dst {
				dst[i] = x[i] / y[i]
			}
		}
	}, func(n int) func() {
		d := benchData(n, 3)
		return func() { Div(d[0], d[1], d[2]) }
	})
}

func BenchmarkMulScalar(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		dst, x := d[0], d[1]
		return func() {
			for i := range dst {
				dst[i] = x[i] * 1.5
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { MulScalar(d[0], d[1], 1.5) }
	})
}

func BenchmarkAddScalarReLU(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		dst, x := d[0], d[1]
		return func() {
			for i := range dst {
				v := x[i] + 0.1
				if v < 0 {
					v = 0
				}
				dst[i] = v
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { AddScalarReLU(d[0], d[1], 0.1) }
	})
}

func BenchmarkAxpy(b *testing.B) {
	benchFn(b, 12, func(n int) func() {
		d := benchData(n, 2)
		dst, x := d[0], d[1]
		return func() {
			for i := range dst {
				dst[i] += 1e-9 * x[i]
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { Axpy(d[0], 1e-9, d[1]) }
	})
}

// Rows of 512 (a linear layer's bias over a batch).
const benchRow = 512

func BenchmarkAddRows(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		dst, a, row := d[0], d[1], d[1][:benchRow]
		return func() {
			for i := 0; i < n; i += benchRow {
				for j, r := range row {
					dst[i+j] = a[i+j] + r
				}
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { AddRows(d[0], d[1], d[1][:benchRow]) }
	})
}

func BenchmarkAddRowsReLU(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		dst, a, row := d[0], d[1], d[1][:benchRow]
		return func() {
			for i := 0; i < n; i += benchRow {
				for j, r := range row {
					v := a[i+j] + r
					if v < 0 {
						v = 0
					}
					dst[i+j] = v
				}
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { AddRowsReLU(d[0], d[1], d[1][:benchRow]) }
	})
}

func BenchmarkReLU(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		dst, x := d[0], d[1]
		return func() {
			for i := range dst {
				v := x[i]
				if v < 0 {
					v = 0
				}
				dst[i] = v
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { ReLU(d[0], d[1]) }
	})
}

func BenchmarkReLUGrad(b *testing.B) {
	benchFn(b, 12, func(n int) func() {
		d := benchData(n, 3)
		dst, g, y := d[0], d[1], d[2]
		return func() {
			for i := range dst {
				if y[i] > 0 {
					dst[i] = g[i]
				} else {
					dst[i] = 0
				}
			}
		}
	}, func(n int) func() {
		d := benchData(n, 3)
		return func() { ReLUGrad(d[0], d[1], d[2]) }
	})
}

var sink float32

func BenchmarkSum(b *testing.B) {
	benchFn(b, 4, func(n int) func() {
		a := benchData(n, 1)[0]
		return func() {
			var s float32
			for _, v := range a {
				s += v
			}
			sink += s
		}
	}, func(n int) func() {
		a := benchData(n, 1)[0]
		return func() { sink += Sum(a) }
	})
}

func BenchmarkDot(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		x, y := d[0], d[1]
		return func() {
			var s float32
			for i, v := range x {
				s += v * y[i]
			}
			sink += s
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { sink += Dot(d[0], d[1]) }
	})
}

func BenchmarkMax(b *testing.B) {
	benchFn(b, 4, func(n int) func() {
		a := benchData(n, 1)[0]
		return func() {
			m := a[0]
			for _, v := range a {
				if v > m || v != v {
					m = v
				}
			}
			sink += m
		}
	}, func(n int) func() {
		a := benchData(n, 1)[0]
		return func() { sink += Max(a) }
	})
}

func BenchmarkArgMax(b *testing.B) {
	benchFn(b, 4, func(n int) func() {
		a := benchData(n, 1)[0]
		return func() {
			best, m := 0, a[0]
			for i, v := range a {
				if v > m {
					best, m = i, v
				}
			}
			sink += float32(best)
		}
	}, func(n int) func() {
		a := benchData(n, 1)[0]
		return func() { sink += float32(ArgMax(a)) }
	})
}

func BenchmarkSumRows(b *testing.B) {
	benchFn(b, 4, func(n int) func() {
		d := benchData(n, 1)
		a, dst := d[0], make([]float32, benchRow)
		return func() {
			for i := 0; i < n; i += benchRow {
				for j := range dst {
					dst[j] += a[i+j]
				}
			}
		}
	}, func(n int) func() {
		d := benchData(n, 1)
		a, dst := d[0], make([]float32, benchRow)
		return func() { SumRows(dst, a) }
	})
}

func BenchmarkExp(b *testing.B) {
	benchFn(b, 8, func(n int) func() {
		d := benchData(n, 2)
		dst, x := d[0], d[1]
		return func() {
			for i := range dst {
				dst[i] = float32(math.Exp(float64(x[i])))
			}
		}
	}, func(n int) func() {
		d := benchData(n, 2)
		return func() { Exp(d[0], d[1]) }
	})
}

// softmaxPlain is the straightforward loop: max, exp, sum, loss, gradient.
func softmaxPlain(logits []float32, classes int, labels []int64, grad []float32, scale float32) (loss float64) {
	for r, l := range labels {
		x, g := logits[r*classes:(r+1)*classes], grad[r*classes:(r+1)*classes]
		m := x[0]
		for _, v := range x {
			if v > m {
				m = v
			}
		}
		var s float32
		for j, v := range x {
			e := float32(math.Exp(float64(v - m)))
			g[j] = e
			s += e
		}
		loss -= float64(x[l]-m) - math.Log(float64(s))
		for j := range g {
			g[j] = g[j] / s * scale
		}
		g[l] -= scale
	}
	return loss
}

func BenchmarkSoftmaxCrossEntropy(b *testing.B) {
	for _, classes := range []int{10, 1000} {
		b.Run(fmt.Sprintf("classes=%d", classes), func(b *testing.B) {
			setup := func(n int) ([]float32, []int64, []float32) {
				rows := n / classes
				d := benchData(rows*classes, 2)
				labels := make([]int64, rows)
				for i := range labels {
					labels[i] = int64(i % classes)
				}
				return d[0], labels, d[1]
			}
			benchFn(b, 8, func(n int) func() {
				x, l, g := setup(n)
				return func() { softmaxPlain(x, classes, l, g, 0.01) }
			}, func(n int) func() {
				x, l, g := setup(n)
				return func() { SoftmaxCrossEntropy(x, classes, l, g, 0.01) }
			})
		})
	}
}

func BenchmarkSGDMomentum(b *testing.B) {
	benchFn(b, 20, func(n int) func() {
		d := benchData(n, 3)
		p, g, buf := d[0], d[1], d[2]
		const lr, mom, wd = 1e-9, 0.9, 1e-4
		return func() {
			for i := range p {
				gi := g[i] + wd*p[i]
				buf[i] = mom*buf[i] + gi
				p[i] -= lr * buf[i]
			}
		}
	}, func(n int) func() {
		d := benchData(n, 3)
		return func() { SGDMomentum(d[0], d[1], d[2], 1e-9, 0.9, 0, 1e-4, false, false) }
	})
}

func BenchmarkAdam(b *testing.B) {
	benchFn(b, 28, func(n int) func() {
		d := benchData(n, 4)
		p, g, m, v := d[0], d[1], d[2], d[3]
		for i := range v {
			v[i] *= v[i]
		}
		const lr, b1, b2, eps = 1e-9, 0.9, 0.999, 1e-8
		bc1, bc2 := 1-math.Pow(b1, 10), 1-math.Pow(b2, 10)
		step, bc2s := float32(lr/bc1), float32(math.Sqrt(bc2))
		return func() {
			for i := range p {
				m[i] = b1*m[i] + (1-b1)*g[i]
				v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
				p[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i])))/bc2s + eps)
			}
		}
	}, func(n int) func() {
		d := benchData(n, 4)
		for i := range d[3] {
			d[3][i] *= d[3][i]
		}
		return func() { Adam(d[0], d[1], d[2], d[3], 1e-9, 0.9, 0.999, 1e-8, 0, 10, false) }
	})
}

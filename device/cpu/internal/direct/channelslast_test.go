package direct

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowChannelsLast checks RowChannelsLast (the assembly where the CPU
// has it) against the sum in float64, for whole and partial blocks of 16
// channels, position counts that take every step (eight, four, one), no
// tap to nine, a clamp, and outputs further apart than the channels; the
// outputs between positions must stay untouched.
func TestRowChannelsLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, channels := range []int{1, 5, 16, 24, 37, 64} {
		for _, n := range []int{1, 3, 4, 7, 8, 13, 21} {
			for _, ntaps := range []int{0, 1, 4, 9} {
				t.Run(fmt.Sprintf("c%d/n%d/taps%d", channels, n, ntaps), func(t *testing.T) {
					ldo, inStep := channels+3, 2*channels+1
					in := make([]float32, (n+4)*inStep+channels)
					for i := range in {
						in[i] = float32(rng.NormFloat64())
					}
					w := make([]float32, 9*channels)
					for i := range w {
						w[i] = float32(rng.NormFloat64())
					}
					bias := make([]float32, channels)
					for i := range bias {
						bias[i] = float32(rng.NormFloat64())
					}
					inOff, wOff := make([]int, ntaps), make([]int, ntaps)
					for k := range ntaps {
						inOff[k] = rng.IntN(4 * inStep)
						wOff[k] = rng.IntN(9) * channels
					}
					out := make([]float32, n*ldo)
					const sentinel = -12345
					for i := range out {
						out[i] = sentinel
					}
					lo, hi := float32(-1), float32(1.5)
					RowChannelsLast(out, ldo, in, inStep, w, bias, inOff, wOff, n, channels, lo, hi)
					for j := range n {
						for c := range ldo {
							got := out[j*ldo+c]
							if c >= channels {
								if got != sentinel {
									t.Fatalf("position %d, past channel %d: wrote %v", j, c, got)
								}
								continue
							}
							var sum, mag float64
							for k := range ntaps {
								p := float64(w[wOff[k]+c]) * float64(in[inOff[k]+j*inStep+c])
								sum, mag = sum+p, mag+math.Abs(p)
							}
							want := math.Min(math.Max(sum+float64(bias[c]), float64(lo)), float64(hi))
							if math.Abs(float64(got)-want) > 1e-6*(mag+1) {
								t.Fatalf("position %d, channel %d: got %v, want %v", j, c, got, want)
							}
						}
					}
				})
			}
		}
	}
}

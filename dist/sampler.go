package dist

import (
	"fmt"
	"math/rand/v2"
)

// SamplerConfig configures a DistributedSampler.
type SamplerConfig struct {
	// Shuffle draws a new permutation of the dataset each epoch, from Seed
	// and the epoch number: the same on every rank, different each epoch.
	Shuffle bool
	// Seed seeds the permutations; all ranks must use the same.
	Seed uint64
	// DropLast drops the samples left over when the dataset does not
	// divide evenly among the ranks. Otherwise the last shards are padded
	// with samples from the start of the epoch's order, so some samples
	// are seen twice per epoch. Either way every rank gets the same number
	// of samples, hence of batches, and no rank waits for another at the
	// end of an epoch.
	DropLast bool
}

// DistributedSampler gives each rank a disjoint shard of a dataset's
// indices each epoch, PyTorch's DistributedSampler: the epoch's order is
// shared by all ranks and rank r takes every Size-th index starting at r.
// With batch B per rank, the union of the ranks' k-th batches is then the
// k-th batch of size Size·B of a single process going through the same
// order, which makes N-rank training equal to 1-process training with an
// N times larger batch.
type DistributedSampler struct {
	n, rank, size int
	cfg           SamplerConfig
}

// NewDistributedSampler returns the sampler of rank (of size ranks) over a
// dataset of n samples.
func NewDistributedSampler(n, rank, size int, cfg SamplerConfig) (*DistributedSampler, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("dist: NewDistributedSampler: rank %d of %d ranks", rank, size)
	}
	if n < 0 {
		return nil, fmt.Errorf("dist: NewDistributedSampler: %d samples", n)
	}
	if cfg.DropLast && n < size {
		return nil, fmt.Errorf("dist: NewDistributedSampler: %d samples cannot be shared among %d ranks with DropLast", n, size)
	}
	if n == 0 {
		return nil, fmt.Errorf("dist: NewDistributedSampler: empty dataset")
	}
	return &DistributedSampler{n: n, rank: rank, size: size, cfg: cfg}, nil
}

// Len returns the number of samples each rank gets per epoch.
func (s *DistributedSampler) Len() int {
	if s.cfg.DropLast {
		return s.n / s.size
	}
	return (s.n + s.size - 1) / s.size
}

// Indices returns this rank's dataset indices for the given epoch, in the
// order to visit them.
func (s *DistributedSampler) Indices(epoch int) []int {
	order := s.order(epoch)
	total := s.Len() * s.size
	for i := 0; len(order) < total; i++ {
		order = append(order, order[i]) // padding: from the start, cyclically
	}
	out := make([]int, 0, s.Len())
	for i := s.rank; i < total; i += s.size {
		out = append(out, order[i])
	}
	return out
}

// IndicesFrom returns this rank's indices for the rest of an epoch whose
// first start positions of the shared order have been trained on (by
// any number of ranks): the order from position start on, padded (or,
// with DropLast, cut) to a multiple of Size, every Size-th position
// starting at Rank. IndicesFrom(e, 0) is Indices(e). When start is a
// multiple of Size·B for batch B, IndicesFrom(e, start) is Indices(e)
// without its first start/Size indices; with another number of ranks it
// shares the rest of the epoch among them, which is how a run resumes
// on a different world size.
func (s *DistributedSampler) IndicesFrom(epoch, start int) []int {
	if start <= 0 {
		return s.Indices(epoch)
	}
	order := s.order(epoch)
	if start >= s.n {
		return []int{} // the epoch is over (only padding was left)
	}
	rest := order[start:]
	total := (len(rest) + s.size - 1) / s.size * s.size
	if s.cfg.DropLast {
		total = len(rest) / s.size * s.size
	}
	for i := 0; len(rest) < total; i++ {
		rest = append(rest, order[i%s.n]) // padding: from the start, cyclically
	}
	out := make([]int, 0, total/s.size)
	for i := s.rank; i < total; i += s.size {
		out = append(out, rest[i])
	}
	return out
}

// order returns the epoch's order of all the dataset's indices, shared by
// every rank.
func (s *DistributedSampler) order(epoch int) []int {
	if s.cfg.Shuffle {
		return rand.New(rand.NewPCG(s.cfg.Seed, uint64(epoch))).Perm(s.n)
	}
	order := make([]int, s.n)
	for i := range order {
		order[i] = i
	}
	return order
}

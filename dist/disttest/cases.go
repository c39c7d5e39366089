package disttest

import (
	"fmt"
	"math"

	"github.com/hora-dl/hora/device"
	"github.com/hora-dl/hora/dist"
)

// allreduce checks Allreduce of n elements of dt with op.
func (e *env) allreduce(dt device.DType, op dist.ReduceOp, n int) error {
	r, size := e.c.Rank(), e.c.Size()
	g := std(dt)
	if op == dist.Average && dt != device.Int64 {
		g = divisible(size)
	}
	b, err := e.fill(dt, n, table(n, func(i int) int64 { return g(r, i) }))
	if err != nil {
		return e.setupFailed(err)
	}
	defer b.Free()
	what := fmt.Sprintf("allreduce %v %v of %d", dt, op, n)
	if err := e.c.Allreduce(e.ctx, b, op); err != nil {
		e.failf("%s: %v", what, err)
		return e.result()
	}
	e.check(what, b, n, table(n, reduced(op, g, size)))
	return e.result()
}

// halfRounding checks that a Float16 sum is rounded to nearest, ties to
// even, overflowing to ±Inf: ranks 0 and 1 contribute a and b, the others
// zero, so every order of summation rounds once, at the same value.
func (e *env) halfRounding() error {
	cases := []struct{ a, b, want float64 }{
		{2048, 1, 2048}, // 2049 is halfway between halves 2048 and 2050: even
		{2048, 3, 2052},
		{2048, 5, 2052},
		{2048, 7, 2056},
		{1, 2048, 2048},
		{-2048, -3, -2052},
		{1024, 0.25, 1024},
		{1024, 0.5, 1024},
		{1025, 0.5, 1026},
		{65504, 8, 65504},
		{65504, 16, math.Inf(1)}, // 65520 rounds past the largest half
		{-65504, -16, math.Inf(-1)},
	}
	r := e.c.Rank()
	b, err := e.fill(device.Float16, len(cases), table(len(cases), func(i int) int64 {
		switch r {
		case 0:
			return int64(cases[i].a * 4)
		case 1:
			return int64(cases[i].b * 4)
		}
		return 0
	}))
	if err != nil {
		return e.setupFailed(err)
	}
	defer b.Free()
	if err := e.c.Allreduce(e.ctx, b, dist.Sum); err != nil {
		e.failf("allreduce float16 sum: %v", err)
		return e.result()
	}
	got := make([]uint16, len(cases))
	if err := e.dev.Read(got, b); err != nil {
		e.failf("read: %v", err)
		return e.result()
	}
	for i, c := range cases {
		if v := halfValue(got[i]); v != c.want {
			e.failf("float16 %v + %v = %v, want %v", c.a, c.b, v, c.want)
		}
	}
	return e.result()
}

// broadcast checks Broadcast of n elements of dt from root.
func (e *env) broadcast(dt device.DType, root, n int) error {
	r := e.c.Rank()
	g := std(dt)
	b, err := e.fill(dt, n, table(n, func(i int) int64 {
		if r == root {
			return g(root, i)
		}
		return filler(r)
	}))
	if err != nil {
		return e.setupFailed(err)
	}
	defer b.Free()
	what := fmt.Sprintf("broadcast %v of %d from %d", dt, n, root)
	if err := e.c.Broadcast(e.ctx, b, root); err != nil {
		e.failf("%s: %v", what, err)
		return e.result()
	}
	e.check(what, b, n, table(n, func(i int) int64 { return g(root, i) }))
	return e.result()
}

// allgather checks Allgather of n elements of dt per rank.
func (e *env) allgather(dt device.DType, n int) error {
	r, size := e.c.Rank(), e.c.Size()
	g := std(dt)
	pats := make([][]int64, size)
	for q := range size {
		pats[q] = table(n, func(i int) int64 { return g(q, i) })
	}
	src, err := e.fill(dt, n, pats[r])
	if err != nil {
		return e.setupFailed(err)
	}
	defer src.Free()
	dst, err := e.fill(dt, size*n, table(size*n, func(int) int64 { return filler(r) }))
	if err != nil {
		return e.setupFailed(err)
	}
	defer dst.Free()
	what := fmt.Sprintf("allgather %v of %d", dt, n)
	if err := e.c.Allgather(e.ctx, dst, src); err != nil {
		e.failf("%s: %v", what, err)
		return e.result()
	}
	e.check(what, dst, n, pats...)
	e.check(what+": source", src, n, pats[r])
	return e.result()
}

// barriers checks that Barriers complete, several in a row.
func (e *env) barriers() error {
	for k := range 5 {
		if err := e.c.Barrier(e.ctx); err != nil {
			e.failf("barrier %d: %v", k, err)
		}
	}
	return e.result()
}

// barrierAllreduce checks an Allreduce between Barriers.
func (e *env) barrierAllreduce() error {
	r, size := e.c.Rank(), e.c.Size()
	b, err := e.fill(device.Int64, 3, table(3, func(i int) int64 { return int64((r + 1) * (i + 1)) }))
	if err != nil {
		return e.setupFailed(err)
	}
	defer b.Free()
	if err := e.c.Barrier(e.ctx); err != nil {
		e.failf("barrier before: %v", err)
	}
	err = e.c.Allreduce(e.ctx, b, dist.Sum)
	if err != nil {
		e.failf("allreduce: %v", err)
	}
	if err := e.c.Barrier(e.ctx); err != nil {
		e.failf("barrier after: %v", err)
	}
	if err == nil {
		e.check("allreduce between barriers", b, 3, table(3, func(i int) int64 { return int64(size*(size+1)/2) * int64(i+1) }))
	}
	return e.result()
}

// argumentErrors checks that bad arguments, the same on every rank, fail
// on every rank without meeting the others, and that the group works
// afterwards.
func (e *env) argumentErrors() error {
	r, size := e.c.Rank(), e.c.Size()
	const n = 4
	g := std(device.Float32)
	pat := table(n, func(i int) int64 { return g(r, i) })
	b, err := e.fill(device.Float32, n, pat)
	if err != nil {
		return e.setupFailed(err)
	}
	defer b.Free()
	bufs := map[string]struct {
		dt device.DType
		n  int
	}{
		"short": {device.Float32, size*n - 1},
		"long":  {device.Float32, size*n + 1},
		"f64":   {device.Float64, size * n},
		"f16":   {device.Float16, size * n},
	}
	dst := map[string]device.Buffer{}
	for name, s := range bufs {
		d, err := e.dev.Alloc(s.dt, s.n)
		if err != nil {
			return e.setupFailed(err)
		}
		defer d.Free()
		dst[name] = d
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"allreduce of a nil buffer", func() error { return e.c.Allreduce(e.ctx, nil, dist.Sum) }},
		{"allreduce with op 0", func() error { return e.c.Allreduce(e.ctx, b, 0) }},
		{"allreduce with op -1", func() error { return e.c.Allreduce(e.ctx, b, -1) }},
		{"allreduce with op 42", func() error { return e.c.Allreduce(e.ctx, b, 42) }},
		{"broadcast of a nil buffer", func() error { return e.c.Broadcast(e.ctx, nil, 0) }},
		{"broadcast from root -1", func() error { return e.c.Broadcast(e.ctx, b, -1) }},
		{"broadcast from root Size", func() error { return e.c.Broadcast(e.ctx, b, size) }},
		{"allgather from a nil source", func() error { return e.c.Allgather(e.ctx, dst["long"], nil) }},
		{"allgather into a nil destination", func() error { return e.c.Allgather(e.ctx, nil, b) }},
		{"allgather into a short destination", func() error { return e.c.Allgather(e.ctx, dst["short"], b) }},
		{"allgather into a long destination", func() error { return e.c.Allgather(e.ctx, dst["long"], b) }},
		{"allgather into a float64 destination", func() error { return e.c.Allgather(e.ctx, dst["f64"], b) }},
		{"allgather into a float16 destination", func() error { return e.c.Allgather(e.ctx, dst["f16"], b) }},
	}
	for _, c := range calls {
		if err := c.call(); err == nil {
			e.failf("%s: no error", c.name)
		}
	}
	e.check("buffer after the failed calls", b, n, pat)
	if err := e.c.Allreduce(e.ctx, b, dist.Sum); err != nil {
		e.failf("allreduce after the failed calls: %v", err)
		return e.result()
	}
	e.check("allreduce after the failed calls", b, n, table(n, reduced(dist.Sum, g, size)))
	return e.result()
}

// sequence checks a long run of mixed collectives on reused buffers: a
// group stays usable, and state from one collective does not leak into
// the next.
func (e *env) sequence() error {
	r, size := e.c.Rank(), e.c.Size()
	f32, i64, f16, f64 := std(device.Float32), std(device.Int64), std(device.Float16), std(device.Float64)
	a, err := e.dev.Alloc(device.Float32, 13)
	if err != nil {
		return e.setupFailed(err)
	}
	defer a.Free()
	bc, err := e.dev.Alloc(device.Int64, 7)
	if err != nil {
		return e.setupFailed(err)
	}
	defer bc.Free()
	src, err := e.dev.Alloc(device.Float16, 3)
	if err != nil {
		return e.setupFailed(err)
	}
	defer src.Free()
	dst, err := e.dev.Alloc(device.Float16, 3*size)
	if err != nil {
		return e.setupFailed(err)
	}
	defer dst.Free()
	mx, err := e.dev.Alloc(device.Float64, 1009)
	if err != nil {
		return e.setupFailed(err)
	}
	defer mx.Free()
	shift := func(g gen, k int) gen { return func(r, i int) int64 { return g(r, i+k) } }
	for k := range 20 {
		root := k % size
		ga, gb, gs, gm := shift(f32, k), shift(i64, k), shift(f16, k), shift(f64, k)
		for _, w := range []struct {
			b device.Buffer
			f func(i int) int64
		}{
			{a, func(i int) int64 { return ga(r, i) }},
			{bc, func(i int) int64 {
				if r == root {
					return gb(r, i)
				}
				return filler(r)
			}},
			{src, func(i int) int64 { return gs(r, i) }},
			{dst, func(int) int64 { return filler(r) }},
			{mx, func(i int) int64 { return gm(r, i) }},
		} {
			if err := e.write(w.b, table(w.b.Len(), w.f)); err != nil {
				return e.setupFailed(err)
			}
		}
		// Every collective is made even when one fails, so that the
		// other ranks are never left waiting; only the results of
		// successful steps are checked.
		ok := true
		for _, step := range []struct {
			name string
			err  error
		}{
			{"allreduce", e.c.Allreduce(e.ctx, a, dist.Sum)},
			{"broadcast", e.c.Broadcast(e.ctx, bc, root)},
			{"allgather", e.c.Allgather(e.ctx, dst, src)},
			{"barrier", e.c.Barrier(e.ctx)},
			{"allreduce max", e.c.Allreduce(e.ctx, mx, dist.Max)},
		} {
			if step.err != nil {
				e.failf("step %d: %s: %v", k, step.name, step.err)
				ok = false
			}
		}
		if !ok {
			continue
		}
		gathered := make([][]int64, size)
		for q := range size {
			gathered[q] = table(3, func(i int) int64 { return gs(q, i) })
		}
		e.check(fmt.Sprintf("step %d: allreduce float32 sum", k), a, 13, table(13, reduced(dist.Sum, ga, size)))
		e.check(fmt.Sprintf("step %d: broadcast int64 from %d", k, root), bc, 7, table(7, func(i int) int64 { return gb(root, i) }))
		e.check(fmt.Sprintf("step %d: allgather float16", k), dst, 3, gathered...)
		e.check(fmt.Sprintf("step %d: allreduce float64 max", k), mx, 1009, table(1009, reduced(dist.Max, gm, size)))
	}
	return e.result()
}

package tensor

import (
	"slices"

	"github.com/hora-dl/hora/device"
)

// Planned runs. A ShareSizes arena records the buffers a run takes and
// gives back, in order. When the next Reset finds no plan (or the last one
// was not followed), it places that run's buffers in one slab per device
// and element type, each at the lowest offset free for its lifetime (as
// onnxruntime's memory patterns do), and frees the buffers it held. The
// runs that follow take slices of the slabs at those offsets: their values
// live in as little memory as the run's peak needs, reused as soon as it
// is given back, so that more of it stays in cache. A run that asks for
// another size, or for memory whose planned owner it has not yet given
// back, leaves the plan for the rest of the run (its buffers then come
// from the free ones or new ones, as without a plan), and a new plan is
// made from it; after maxPlanMisses such runs in a row the arena stops
// planning.

// maxPlanMisses is how many runs in a row may leave their plan before a
// ShareSizes arena stops planning (their sequence of buffers changes from
// run to run).
const maxPlanMisses = 2

// planAlign is the alignment of a planned buffer in its slab, in bytes:
// a cache line, so that no two values share one.
const planAlign = 64

// slabKey is what one slab holds: buffers of one device and element type.
type slabKey struct {
	dev device.Device
	dt  device.DType
}

// planTrace is what a run took and gave back: takes[i] is its i-th buffer,
// and events lists i for the i-th take and -(i+1) for its release, in the
// order they happened.
type planTrace struct {
	takes  []arenaKey
	events []int
}

func (tr *planTrace) reset() {
	tr.takes, tr.events = tr.takes[:0], tr.events[:0]
}

// arenaPlan is where each buffer of a recorded run lies: the i-th at
// offs[i] elements into the slab of takes[i]'s device and type.
type arenaPlan struct {
	takes []arenaKey
	offs  []int
	slabs map[slabKey]device.Buffer
}

// plannedSpan is a slab's range [off, end) held by a value of the run.
type plannedSpan struct {
	slab     slabKey
	off, end int
	take     int // the take's index in the run
}

// planOffsets places the takes of a trace: first fit, in the order they
// were taken, among the ranges of the values alive at that moment. It
// returns each take's offset and each slab's size, in elements.
func planOffsets(tr *planTrace) (offs []int, sizes map[slabKey]int) {
	offs = make([]int, len(tr.takes))
	sizes = map[slabKey]int{}
	live := map[slabKey][]plannedSpan{} // sorted by off
	for _, e := range tr.events {
		if e < 0 {
			i := -e - 1
			k := tr.takes[i]
			sk := slabKey{k.dev, k.dt}
			live[sk] = slices.DeleteFunc(live[sk], func(s plannedSpan) bool { return s.take == i })
			continue
		}
		k := tr.takes[e]
		sk := slabKey{k.dev, k.dt}
		align := max(1, planAlign/k.dt.Size())
		need := (k.n + align - 1) / align * align
		at, pos := 0, 0
		for j, s := range live[sk] {
			if s.off-at >= need {
				break
			}
			at, pos = max(at, s.end), j+1
		}
		live[sk] = slices.Insert(live[sk], pos, plannedSpan{slab: sk, off: at, end: at + need, take: e})
		offs[e] = at
		sizes[sk] = max(sizes[sk], at+need)
	}
	return offs, sizes
}

// takePlanned returns the planned slice for the run's take-th buffer, of
// n elements of dt on dev, or nil when the run does not follow the plan
// (it then stops following it).
func (a *Arena) takePlanned(take int, dev device.Device, dt device.DType, n int) device.Buffer {
	p := a.plan
	if p == nil || a.offPlan {
		return nil
	}
	if take >= len(p.takes) || p.takes[take] != (arenaKey{dev, dt, n}) {
		a.offPlan = true
		return nil
	}
	sk := slabKey{dev, dt}
	span := plannedSpan{slab: sk, off: p.offs[take], end: p.offs[take] + n, take: take}
	for _, s := range a.live {
		if s.slab == sk && s.off < span.end && span.off < s.end {
			a.offPlan = true // its memory's last owner is still alive
			return nil
		}
	}
	view, err := device.SliceOf(p.slabs[sk], span.off, n)
	if err != nil {
		a.offPlan = true
		return nil
	}
	a.live = append(a.live, span)
	return view
}

// givePlanned ends the life of the run's take-th buffer in its slab.
func (a *Arena) givePlanned(take int) {
	a.live = slices.DeleteFunc(a.live, func(s plannedSpan) bool { return s.take == take })
}

// replan is Reset's part for a ShareSizes arena: it keeps a plan the run
// followed, or makes one from the run's trace, freeing the slabs of the
// old plan and the free buffers the run took outside it.
func (a *Arena) replan() {
	defer func() {
		a.trace.reset()
		a.live = a.live[:0]
		a.offPlan = false
	}()
	if a.plan != nil && !a.offPlan && len(a.trace.takes) == len(a.plan.takes) {
		a.misses = 0 // followed
		return
	}
	if a.noPlan || len(a.trace.takes) == 0 {
		return
	}
	if a.plan != nil {
		if a.misses++; a.misses >= maxPlanMisses {
			a.noPlan = true
			return
		}
		for _, b := range a.plan.slabs {
			b.Free()
		}
	}
	offs, sizes := planOffsets(&a.trace)
	slabs := map[slabKey]device.Buffer{}
	for sk, n := range sizes {
		b, err := sk.dev.Alloc(sk.dt, n)
		if err != nil {
			a.plan, a.noPlan = nil, true // run without a plan, on the buffers held
			return
		}
		slabs[sk] = b
	}
	for _, b := range a.recent {
		b.Free()
	}
	clear(a.recent)
	a.recent = a.recent[:0]
	a.plan = &arenaPlan{takes: slices.Clone(a.trace.takes), offs: offs, slabs: slabs}
}

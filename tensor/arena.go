package tensor

import (
	"fmt"
	"slices"

	"github.com/hora-dl/hora/device"
)

// Arena recycles the buffers of the tensors computed during one step of a
// loop (a training step: forward, loss, backward), so that a steady-state
// step allocates almost no memory and the garbage collector stays idle.
//
// An arena travels with the data, like autograd's no-grad mode: the result
// of an operation takes its buffer from the arena of the first of its
// inputs that has one (see WithArena), and carries that arena on. Tensors
// computed only from tensors without an arena (parameters, optimizer
// state) never use one, so state that must outlive the step is safe.
//
// Reset hands every buffer back for the next step: tensors computed since
// the previous Reset must not be used afterwards (an operation on one
// panics). An Arena is used by one goroutine at a time.
type Arena struct {
	free map[arenaKey][]device.Buffer
	// recent holds the free buffers, the most recently freed last, once
	// ShareSizes was called (free is then unused).
	recent     []device.Buffer
	shareSizes bool
	// A ShareSizes arena's planned runs (arenaplan.go): this run's trace,
	// the plan it follows, the planned values alive, whether the run left
	// the plan, and the runs in a row that did.
	trace   planTrace
	plan    *arenaPlan
	live    []plannedSpan
	offPlan bool
	noPlan  bool
	misses  int
	used    []arenaUse // handed out since the last Reset, in that order
	gen     uint64
	// handed counts the buffers handed out since the arena was made; it
	// numbers them (arenaUse.n) for Mark and Release.
	handed uint64
	// Tensor values handed out since the last Reset come from slabs, so
	// that a steady-state step allocates no Tensor either.
	slabs [][]Tensor
	next  int // index of the next free Tensor, over all slabs
}

const slabSize = 64

// arenaUse is a buffer handed out and its number: the arena's handed
// count just after it was handed out. view is what the tensor holds: buf
// itself, or the front of it (ShareSizes), or a slice of a planned run's
// slab (buf nil). take is its index among the run's buffers in a
// ShareSizes arena that plans its runs (-1 in others).
type arenaUse struct {
	buf, view device.Buffer
	n         uint64
	take      int
}

type arenaKey struct {
	dev device.Device
	dt  device.DType
	n   int
}

// NewArena returns an empty arena.
func NewArena() *Arena {
	return &Arena{free: map[arenaKey][]device.Buffer{}, gen: 1}
}

// maxShareRatio is how many times larger than the size asked for a free
// buffer may be for a ShareSizes arena to hand out its front. mobilenet_v2
// at batch 1 (2 Zen 5 threads, alternating runs): 2.29 ms with buffers
// of the exact size only (17.8 MB of them), 2.09 ms up to 2× (14.3 MB),
// 2.03 ms up to 4× (10.6 MB), which was 1–2% slower than exact sizes on
// resnet18 while the host was busy.
const maxShareRatio = 2

// ShareSizes lets the arena hand out the front of a larger free buffer
// (up to maxShareRatio times the size asked for) when the device can
// slice its buffers (device.Slicer), taking the most recently freed buffer
// that fits: its memory is the likeliest to be in cache, and the arena
// holds less memory than one set of buffers per size. Inference runs of
// imported models use it while their values fit in a few tens of
// megabytes (their values are freed as soon as no later node reads them;
// see onnx's maxSharedArena); a tensor on such a front cannot be kept
// (Keep). Call it before the arena hands out its first buffer.
//
// Such an arena also plans its runs (see arenaplan.go): from the second
// Reset on, a run that takes the buffers its predecessor took, in the
// same order, finds them in one slab, placed so that it holds no more
// than the run's peak.
func (a *Arena) ShareSizes() { a.shareSizes = true }

// SharesSizes reports whether ShareSizes was called.
func (a *Arena) SharesSizes() bool { return a.shareSizes }

// Reset makes every buffer handed out since the last Reset available again
// and invalidates the tensors that use them. Using such a tensor panics
// until its memory is handed out again in the next step; from then on the
// mistake can no longer be detected, so do not keep tensors across Reset.
func (a *Arena) Reset() {
	for _, u := range a.used {
		if u.buf != nil {
			a.putFree(u.buf)
		}
	}
	clear(a.used)
	a.used = a.used[:0]
	if a.shareSizes {
		a.replan()
	}
	for i := 0; i < a.next; i++ {
		// Let go of the buffer; keep arena and gen so that using the
		// stale tensor panics (until the Tensor is handed out again).
		a.slabs[i/slabSize][i%slabSize].buf = nil
	}
	a.next = 0
	a.gen++
}

// newTensor returns a zero Tensor owned by the arena (valid until Reset)
// that carries the arena.
func (a *Arena) newTensor() *Tensor {
	i, j := a.next/slabSize, a.next%slabSize
	if i == len(a.slabs) {
		a.slabs = append(a.slabs, make([]Tensor, slabSize))
	}
	a.next++
	t := &a.slabs[i][j]
	*t = Tensor{arena: a, gen: a.gen}
	return t
}

// Bytes returns the memory the arena holds, in use or free.
func (a *Arena) Bytes() int {
	n := 0
	for k, bs := range a.free {
		n += len(bs) * k.n * k.dt.Size()
	}
	for _, b := range a.recent {
		n += b.Len() * b.DType().Size()
	}
	if a.plan != nil {
		for _, b := range a.plan.slabs {
			n += b.Len() * b.DType().Size()
		}
	}
	for _, u := range a.used {
		if u.buf != nil {
			n += u.buf.Len() * u.buf.DType().Size()
		}
	}
	return n
}

// alloc returns a buffer of n elements, reused when one is free. Its
// contents are arbitrary.
func (a *Arena) alloc(dev device.Device, dt device.DType, n int) device.Buffer {
	take := -1
	if a.shareSizes && !a.noPlan {
		take = len(a.trace.takes)
		a.trace.takes = append(a.trace.takes, arenaKey{dev, dt, n})
		a.trace.events = append(a.trace.events, take)
		if view := a.takePlanned(take, dev, dt, n); view != nil {
			a.handed++
			a.used = append(a.used, arenaUse{view: view, n: a.handed, take: take})
			return view
		}
	}
	b, view := a.takeFree(dev, dt, n)
	if b == nil {
		var err error
		if b, err = dev.Alloc(dt, n); err != nil {
			panic(&DeviceError{Op: fmt.Sprintf("allocating %v×%d on %s", dt, n, dev.Name()), Err: err})
		}
		view = b
	}
	a.handed++
	a.used = append(a.used, arenaUse{buf: b, view: view, n: a.handed, take: take})
	return view
}

// giveBack makes the memory of u, handed out in this run, available
// again (Release).
func (a *Arena) giveBack(u arenaUse) {
	if u.take >= 0 {
		a.trace.events = append(a.trace.events, -(u.take + 1))
	}
	if u.buf == nil {
		a.givePlanned(u.take)
		return
	}
	a.putFree(u.buf)
}

// takeFree removes a free buffer for n elements from the free ones and
// returns it and the view of it to hand out (nil, nil when none fits).
func (a *Arena) takeFree(dev device.Device, dt device.DType, n int) (b, view device.Buffer) {
	if !a.shareSizes {
		k := arenaKey{dev, dt, n}
		bs := a.free[k]
		if len(bs) == 0 {
			return nil, nil
		}
		b = bs[len(bs)-1]
		bs[len(bs)-1] = nil
		a.free[k] = bs[:len(bs)-1]
		return b, b
	}
	for i := len(a.recent) - 1; i >= 0; i-- {
		c := a.recent[i]
		if c.Device() != dev || c.DType() != dt || c.Len() < n || c.Len() > maxShareRatio*max(n, 1) {
			continue
		}
		view = c
		if c.Len() != n {
			var err error
			if view, err = device.SliceOf(c, 0, n); err != nil {
				continue // the device cannot slice: exact sizes only
			}
		}
		a.recent = slices.Delete(a.recent, i, i+1)
		return c, view
	}
	return nil, nil
}

// putFree makes b available to alloc.
func (a *Arena) putFree(b device.Buffer) {
	if a.shareSizes {
		a.recent = append(a.recent, b)
		return
	}
	k := arenaKey{b.Device(), b.DType(), b.Len()}
	a.free[k] = append(a.free[k], b)
}

// An ArenaMark is a point in the life of an arena (see Arena.Mark).
type ArenaMark struct {
	a *Arena
	n uint64
}

// Mark returns the point the arena has reached: the memory it hands out
// from now on may be given back before the next Reset with Release.
func (a *Arena) Mark() ArenaMark { return ArenaMark{a, a.handed} }

// Release gives the memory of t back to t's arena before the next Reset,
// so that the rest of the step reuses it, when the arena is m's and
// handed that memory out after m (in this step); it reports whether it
// did. The caller promises that nothing reads or writes that memory
// afterwards, through t or any other tensor (views included): the values
// become arbitrary, and using t itself panics as after Reset.
//
// Backward releases the gradients it is done with this way, so that a
// step's backward pass reuses their memory instead of adding to it.
func (t *Tensor) Release(m ArenaMark) bool {
	a := t.arena
	if a == nil || a != m.a || t.buf == nil || t.gen != a.gen {
		return false
	}
	// The numbers grow along used (Keep and Release delete entries, and
	// Keep's swap keeps an entry's number): look back to the mark only.
	for i := len(a.used) - 1; i >= 0 && a.used[i].n > m.n; i-- {
		if a.used[i].view == t.buf {
			a.giveBack(a.used[i])
			a.used = slices.Delete(a.used, i, i+1)
			t.gen = 0 // a generation no arena has: using t panics
			return true
		}
	}
	return false
}

// WithArena returns a view of t whose results take their buffers from a
// (t's own buffer is not the arena's). Pass nil to get a view without one.
func (t *Tensor) WithArena(a *Arena) *Tensor {
	t.checkLive()
	v := t.view(t.shape, t.strides, t.offset)
	v.arena = a
	if a != nil {
		v.gen = a.gen
	}
	return v
}

// Arena returns the arena t's results allocate from (nil for none).
func (t *Tensor) Arena() *Arena { return t.arena }

// checkLive panics when t was computed from an arena that has been Reset
// since.
func (t *Tensor) checkLive() {
	if t.arena != nil && t.gen != t.arena.gen {
		panic(fmt.Sprintf("tensor: a %v tensor was used after its Arena was Reset (or after Release)", t.shape))
	}
}

// arenaOf returns the arena of the first input that has one, panicking if
// any input is stale.
func arenaOf(ts ...*Tensor) *Arena {
	var a *Arena
	for _, t := range ts {
		if t == nil || t.arena == nil {
			continue
		}
		t.checkLive()
		if a == nil {
			a = t.arena
		}
	}
	return a
}

// newOut returns a dense result tensor for an operation on the inputs
// from: on the first input's device, from the inputs' arena if any. With
// zero false the contents are arbitrary (the operation overwrites them).
func newOut(zero bool, dt device.DType, shape []int, from ...*Tensor) *Tensor {
	dev := from[0].Device()
	a := arenaOf(from...)
	if a == nil {
		return New(dev, dt, shape...)
	}
	n := numElements(shape)
	b := a.alloc(dev, dt, n)
	if zero && n > 0 {
		dev.Kernels().Fill(b, n, 0)
	}
	t := a.newTensor()
	t.buf = b
	t.setContiguous(shape)
	return t
}

// FromSlice is tensor.FromSlice with the buffer taken from the arena: the
// tensor, and what is computed from it, are valid until the next Reset.
func (a *Arena) FromSlice(dev device.Device, data any, shape ...int) (*Tensor, error) {
	dt, err := checkSlice(data, shape)
	if err != nil {
		return nil, err
	}
	n := device.NumElements(shape)
	t := a.newTensor()
	t.buf = a.alloc(dev, dt, n)
	t.setContiguous(shape)
	if err := dev.Write(t.buf, data); err != nil {
		return nil, err
	}
	return t, nil
}

// Keep moves t's memory out of its arena, so that it survives Reset: it
// returns a tensor with t's values that has no arena, without copying.
// When spare is given, the two swap memory: the arena receives spare's
// buffer (so that the next step finds one again) and spare, which is
// returned, now holds t's values; spare may be nil. ok is false, and
// nothing changes, when t has no arena or is not a dense tensor covering
// its whole buffer (a view), when its buffer is the front of a larger one
// (ShareSizes), or when spare does not match t's device, type and size.
//
// Backward uses it to make a parameter's gradient, computed in the step's
// arena, the parameter's Grad without a copy.
func (t *Tensor) Keep(spare *Tensor) (kept *Tensor, ok bool) {
	a := t.arena
	if a == nil || t.buf == nil || !t.IsContiguous() {
		return nil, false
	}
	t.checkLive()
	if spare != nil && (spare.arena != nil || spare.buf.Device() != t.buf.Device() ||
		spare.buf.DType() != t.buf.DType() || spare.buf.Len() != t.buf.Len()) {
		return nil, false
	}
	i := slices.IndexFunc(a.used, func(u arenaUse) bool { return u.view == t.buf })
	if i < 0 || a.used[i].buf != t.buf {
		return nil, false // already kept, or the front of a larger buffer
	}
	if spare != nil {
		a.used[i].buf, spare.buf = spare.buf, t.buf
		a.used[i].view = a.used[i].buf
		spare.setContiguous(t.shape)
		spare.offset = 0
		return spare, true
	}
	a.used = slices.Delete(a.used, i, i+1)
	kept = &Tensor{buf: t.buf}
	kept.setContiguous(t.shape)
	return kept, true
}

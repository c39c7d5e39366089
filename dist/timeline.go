package dist

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// Timeline writes a Chrome-tracing JSON file (open it in chrome://tracing
// or https://ui.perfetto.dev): one row per tensor with its QUEUE
// (negotiation), MEMCPY_IN_FUSION_BUFFER, ALLREDUCE or BROADCAST and
// MEMCPY_OUT_FUSION_BUFFER spans, and rows for the training phases
// (forward, backward, step). Horovod writes it on rank 0 only; so does
// the trainer (package train).
//
// All methods are safe for concurrent use, and do nothing on a nil
// *Timeline, so code can record unconditionally and a disabled timeline
// costs a nil check.
type Timeline struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	start  time.Time
	rows   map[string]int
	buf    []byte
	events int
	err    error
}

// NewTimeline starts a timeline written to w. Times are relative to now.
func NewTimeline(w io.Writer) *Timeline {
	t := &Timeline{w: bufio.NewWriterSize(w, 64<<10), start: time.Now(), rows: map[string]int{}}
	t.buf = append(t.buf, "[\n"...)
	return t
}

// CreateTimeline creates (truncates) the file at path and starts a
// timeline in it.
func CreateTimeline(path string) (*Timeline, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("dist: timeline: %w", err)
	}
	t := NewTimeline(f)
	t.closer = f
	return t, nil
}

// Span records an event called name on the given row, from start to end.
func (t *Timeline) Span(row, name string, start, end time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tid := t.row(row)
	t.event(name, 'X', tid, start, end.Sub(start))
}

// Instant records a zero-length event on the given row, now.
func (t *Timeline) Instant(row, name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tid := t.row(row)
	t.event(name, 'i', tid, time.Now(), 0)
}

// row returns the thread id of a row, announcing new rows to the viewer.
func (t *Timeline) row(name string) int {
	tid, ok := t.rows[name]
	if ok {
		return tid
	}
	tid = len(t.rows) + 1
	t.rows[name] = tid
	t.sep()
	t.buf = append(t.buf, `{"name":"thread_name","ph":"M","pid":0,"tid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(tid), 10)
	t.buf = append(t.buf, `,"args":{"name":`...)
	t.buf = strconv.AppendQuote(t.buf, name)
	t.buf = append(t.buf, "}},\n"...)
	t.buf = append(t.buf, `{"name":"thread_sort_index","ph":"M","pid":0,"tid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(tid), 10)
	t.buf = append(t.buf, `,"args":{"sort_index":`...)
	t.buf = strconv.AppendInt(t.buf, int64(tid), 10)
	t.buf = append(t.buf, "}}"...)
	t.events++
	return tid
}

func (t *Timeline) sep() {
	if t.events > 0 {
		t.buf = append(t.buf, ",\n"...)
	}
}

// event appends one event, in microseconds since the timeline started.
func (t *Timeline) event(name string, ph byte, tid int, at time.Time, dur time.Duration) {
	t.sep()
	t.buf = append(t.buf, `{"name":`...)
	t.buf = strconv.AppendQuote(t.buf, name)
	t.buf = append(t.buf, `,"ph":"`...)
	t.buf = append(t.buf, ph)
	t.buf = append(t.buf, `","pid":0,"tid":`...)
	t.buf = strconv.AppendInt(t.buf, int64(tid), 10)
	t.buf = append(t.buf, `,"ts":`...)
	t.buf = strconv.AppendFloat(t.buf, float64(at.Sub(t.start).Nanoseconds())/1e3, 'f', 3, 64)
	if ph == 'X' {
		t.buf = append(t.buf, `,"dur":`...)
		t.buf = strconv.AppendFloat(t.buf, float64(dur.Nanoseconds())/1e3, 'f', 3, 64)
	} else {
		t.buf = append(t.buf, `,"s":"t"`...)
	}
	t.buf = append(t.buf, '}')
	t.events++
	if len(t.buf) >= 32<<10 {
		t.write()
	}
}

func (t *Timeline) write() {
	if t.err == nil {
		_, t.err = t.w.Write(t.buf)
	}
	t.buf = t.buf[:0]
}

// Close ends the JSON array, flushes, and closes the file CreateTimeline
// opened. It returns the first write error.
func (t *Timeline) Close() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, "\n]\n"...)
	t.write()
	if t.err == nil {
		t.err = t.w.Flush()
	}
	if t.closer != nil {
		if err := t.closer.Close(); t.err == nil {
			t.err = err
		}
		t.closer = nil
	}
	if t.err != nil {
		return fmt.Errorf("dist: timeline: %w", t.err)
	}
	return nil
}

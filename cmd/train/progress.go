package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports how far an epoch has got: a live bar on a terminal, a
// plain line every tenth of the epoch elsewhere (logs, CI), or nothing.
type progress struct {
	bar   *progressbar.ProgressBar // terminal
	w     io.Writer                // non-terminal lines; nil when silent
	total int
	done  int
	next  int // batch count at which the next line is printed
	desc  string
}

func newProgress(w io.Writer, enabled bool, total int, desc string) *progress {
	p := &progress{total: total, desc: desc, next: max(total/10, 1)}
	switch {
	case !enabled:
	case isTerminal(w):
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	default:
		p.w = w
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// step records one more batch; status is shown beside the count.
func (p *progress) step(status string) {
	p.done++
	if p.bar != nil {
		p.bar.Describe(p.desc + "  " + status)
		_ = p.bar.Add(1)
		return
	}
	if p.w != nil && (p.done >= p.next || p.done == p.total) {
		fmt.Fprintf(p.w, "%s  %d/%d batches  %s\n", p.desc, p.done, p.total, status)
		p.next += max(p.total/10, 1)
	}
}

// finish clears the bar.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

package train

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports how far an epoch has got, counted in optimizer steps:
// a live bar with the ETA, samples/s and loss on a terminal, and a plain
// line every tenth of the epoch elsewhere (logs, CI) and in train.log.
type progress struct {
	bar   *progressbar.ProgressBar // terminal
	lines io.Writer                // plain lines: a non-terminal output and/or the log
	total int
	done  int
	next  int // step count at which the next line is printed
	desc  string
	start time.Time
}

// newProgress returns the progress of an epoch of total steps. out is
// where the bar or lines go (shown only when enabled), log gets the lines
// in any case (nil for none).
func newProgress(out, log io.Writer, enabled bool, total int, desc string) *progress {
	p := &progress{total: total, desc: desc, next: max(total/10, 1), start: time.Now()}
	var lines []io.Writer
	if log != nil {
		lines = append(lines, log)
	}
	switch {
	case !enabled || out == nil:
	case isTerminal(out):
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(out),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	default:
		lines = append(lines, out)
	}
	if len(lines) > 0 {
		p.lines = io.MultiWriter(lines...)
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// step records one more optimizer step, with the mean loss of the recent
// batches and the samples per second of the epoch so far.
func (p *progress) step(loss, samplesPerSec float64) {
	p.done++
	status := fmt.Sprintf("loss %.4f  %.0f samples/s", loss, samplesPerSec)
	if p.bar != nil {
		p.bar.Describe(p.desc + "  " + status)
		_ = p.bar.Add(1)
	}
	if p.lines != nil && (p.done >= p.next || p.done == p.total) {
		eta := time.Duration(float64(time.Since(p.start)) / float64(p.done) * float64(p.total-p.done))
		fmt.Fprintf(p.lines, "%s  %d/%d steps  %s  ETA %s\n", p.desc, p.done, p.total, status, eta.Round(time.Second))
		p.next += max(p.total/10, 1)
	}
}

// pause clears the bar while something else prints (an evaluation); the
// next step draws it again.
func (p *progress) pause() {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
}

// finish clears the bar.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

package curves

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// DefaultWidth and DefaultHeight are the size in pixels of the image Render
// draws when Options leaves the size at zero.
const (
	DefaultWidth  = 1000
	DefaultHeight = 700
)

// dpi is the resolution Render draws at: fonts sized in points come out
// readable at DefaultWidth × DefaultHeight pixels.
const dpi = 96

// markerLimit is the largest number of points of a series drawn with a
// marker on each point (sparse series such as one test loss per epoch).
const markerLimit = 40

// Point is one measurement: the value of a metric after Step optimizer
// steps, at Epoch (fractional) passes over the training set.
type Point struct {
	Step  int
	Epoch float64
	Value float64
}

// Series is one named curve of a Panel, e.g. the training loss.
type Series struct {
	Name   string
	Points []Point
}

// XAxis selects the quantity on a panel's x axis.
type XAxis int

const (
	// XStep draws Point.Step on the x axis.
	XStep XAxis = iota
	// XEpoch draws Point.Epoch on the x axis.
	XEpoch
)

// String returns the axis label: "step" or "epoch".
func (x XAxis) String() string {
	switch x {
	case XStep:
		return "step"
	case XEpoch:
		return "epoch"
	}
	return fmt.Sprintf("XAxis(%d)", int(x))
}

// Panel is one chart of the image Render draws.
type Panel struct {
	// Title is drawn above the chart ("loss").
	Title string
	// YLabel labels the y axis; "" leaves it unlabeled.
	YLabel string
	// X selects what the x axis shows: XStep (the zero value) or XEpoch.
	X XAxis
	// Series are the curves, each with its own color and legend entry.
	Series []Series
}

// Options tune Render.
type Options struct {
	// Width and Height are the size of the image in pixels; 0 means
	// DefaultWidth and DefaultHeight.
	Width, Height int
}

// Render draws panels stacked vertically, top to bottom, into one PNG image
// of opts.Width × opts.Height pixels and writes it to path atomically (a
// temporary file in the same folder, renamed over path). Points with a NaN
// or infinite coordinate are skipped; a series with a single point is
// drawn as a marker.
func Render(path string, panels []Panel, opts Options) error {
	if path == "" {
		return errors.New("curves: Render: empty output path")
	}
	if len(panels) == 0 {
		return fmt.Errorf("curves: rendering %s: no panels to draw", path)
	}
	width, height := opts.Width, opts.Height
	if width == 0 {
		width = DefaultWidth
	}
	if height == 0 {
		height = DefaultHeight
	}
	if width < 0 || height < 0 {
		return fmt.Errorf("curves: rendering %s: expected an image size >= 0 pixels, found %d×%d", path, width, height)
	}
	for i, p := range panels {
		if p.X != XStep && p.X != XEpoch {
			return fmt.Errorf("curves: rendering %s: panel %d (%q): expected x axis XStep or XEpoch, found %v", path, i, p.Title, p.X)
		}
	}

	plots := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		plt, err := newPlot(p)
		if err != nil {
			return fmt.Errorf("curves: rendering %s: panel %d (%q): %w", path, i, p.Title, err)
		}
		plots[i] = []*plot.Plot{plt}
	}

	img := vgimg.NewWith(
		vgimg.UseWH(vg.Length(width)*vg.Inch/dpi, vg.Length(height)*vg.Inch/dpi),
		vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White),
	)
	tiles := draw.Tiles{
		Rows: len(panels), Cols: 1,
		PadY:   vg.Points(12),
		PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(6), PadRight: vg.Points(12),
	}
	canvases := plot.Align(plots, tiles, draw.New(img))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	return writeAtomic(path, vgimg.PngCanvas{Canvas: img})
}

// newPlot builds the chart of one panel.
func newPlot(p Panel) (*plot.Plot, error) {
	plt := plot.New()
	plt.Title.Text = p.Title
	plt.X.Label.Text = p.X.String()
	plt.Y.Label.Text = p.YLabel
	if p.X == XStep {
		plt.X.Tick.Marker = integerTicks{}
	}
	plt.Add(plotter.NewGrid())

	var ends []float64 // last value of each drawn series, for the legend
	for i, s := range p.Series {
		xys := finitePoints(s.Points, p.X)
		if len(xys) == 0 {
			continue
		}
		ends = append(ends, xys[len(xys)-1].Y)
		col := plotutil.Color(i)
		glyph := draw.GlyphStyle{Color: col, Radius: vg.Points(2.5), Shape: plotutil.Shape(i)}
		if len(xys) == 1 {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("series %q: %w", s.Name, err)
			}
			glyph.Radius = vg.Points(4)
			glyph.Shape = draw.CircleGlyph{}
			sc.GlyphStyle = glyph
			plt.Add(sc)
			plt.Legend.Add(s.Name, sc)
			continue
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		if len(xys) > markerLimit {
			plt.Add(line)
			plt.Legend.Add(s.Name, line)
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		sc.GlyphStyle = glyph
		plt.Add(line, sc)
		plt.Legend.Add(s.Name, line, sc)
	}
	// The legend goes in the top right corner unless the curves end in the
	// upper half of the chart (accuracy rising), then in the bottom right.
	plt.Legend.Top = !endsHigh(ends, plt.Y.Min, plt.Y.Max)
	plt.Legend.Padding = vg.Points(2)
	return plt, nil
}

// integerTicks labels the ticks of an axis of whole numbers (steps) without
// decimals: "250" rather than plot's "250.00".
type integerTicks struct{}

// Ticks returns plot's default ticks, relabeled.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" && t.Value == math.Trunc(t.Value) && math.Abs(t.Value) < 1e15 {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		}
	}
	return ticks
}

// finitePoints returns the (x, y) coordinates of the points of pts whose
// coordinates on axis x are finite.
func finitePoints(pts []Point, x XAxis) plotter.XYs {
	xys := make(plotter.XYs, 0, len(pts))
	for _, p := range pts {
		xv := float64(p.Step)
		if x == XEpoch {
			xv = p.Epoch
		}
		if isFinite(xv) && isFinite(p.Value) {
			xys = append(xys, plotter.XY{X: xv, Y: p.Value})
		}
	}
	return xys
}

// endsHigh reports whether the mean of ends lies in the upper half of
// [lo, hi].
func endsHigh(ends []float64, lo, hi float64) bool {
	if len(ends) == 0 || !(hi > lo) {
		return false
	}
	var sum float64
	for _, e := range ends {
		sum += e
	}
	return (sum/float64(len(ends))-lo)/(hi-lo) > 0.5
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// writeAtomic writes the output of w to path through a temporary file in
// the same folder, so a reader never sees a partial file.
func writeAtomic(path string, w io.WriterTo) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("curves: writing %s: cannot create a file in folder %s: %w", path, dir, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := w.WriteTo(f); err != nil {
		return fmt.Errorf("curves: writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("curves: writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("curves: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("curves: writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("curves: writing %s: %w", path, err)
	}
	return nil
}

// Record is one line of a metrics file: the numeric fields by key and the
// string field "kind" ("" when the line has none), which tells apart lines
// of different sorts written to the same file ("step", "eval").
type Record struct {
	Kind   string
	Values map[string]float64
}

// ReadMetrics reads the JSON-lines metrics file at path: one flat JSON
// object per line. Number fields go to Record.Values and the string field
// "kind" to Record.Kind; other fields (strings, booleans, null, nested
// values) are ignored, and blank lines are skipped. A line that is not a
// JSON object is an error naming the file and the line number, except a
// last line without its final newline (a run killed while writing it),
// which is skipped.
func ReadMetrics(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("curves: reading metrics: %w", err)
	}
	defer f.Close()

	var records []Record
	r := bufio.NewReader(f)
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("curves: reading metrics %s:%d: %w", path, lineNo, err)
		}
		last := err == io.EOF
		if len(bytes.TrimSpace(line)) > 0 {
			rec, perr := parseRecord(line)
			switch {
			case perr == nil:
				records = append(records, rec)
			case last && !bytes.HasSuffix(line, []byte("\n")):
				// Cut short by a run killed mid-write: skip it.
			default:
				return nil, fmt.Errorf("curves: reading metrics %s:%d: %w", path, lineNo, perr)
			}
		}
		if last {
			return records, nil
		}
	}
}

// parseRecord decodes one line of a metrics file.
func parseRecord(line []byte) (Record, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return Record{}, fmt.Errorf("expected a JSON object: %w", err)
	}
	if fields == nil {
		return Record{}, errors.New("expected a JSON object, found null")
	}
	rec := Record{Values: make(map[string]float64, len(fields))}
	for key, raw := range fields {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return Record{}, fmt.Errorf("field %q: %w", key, err)
		}
		if key == "kind" {
			kind, ok := v.(string)
			if !ok {
				return Record{}, fmt.Errorf(`field "kind": expected a string, found %s`, raw)
			}
			rec.Kind = kind
			continue
		}
		if x, ok := v.(float64); ok {
			rec.Values[key] = x
		}
	}
	return rec, nil
}

// SeriesOf collects the values of key from the records of the given kind
// (every record when kind is "") into a Series called name. Each point
// takes its Step from the record's "step" value and its Epoch from its
// "epoch" value (0 when absent); records without key are skipped.
func SeriesOf(name string, records []Record, kind, key string) Series {
	s := Series{Name: name}
	for _, r := range records {
		if kind != "" && r.Kind != kind {
			continue
		}
		v, ok := r.Values[key]
		if !ok {
			continue
		}
		p := Point{Epoch: r.Values["epoch"], Value: v}
		if step, ok := r.Values["step"]; ok && isFinite(step) && math.Abs(step) < math.MaxInt32 {
			p.Step = int(step)
		}
		s.Points = append(s.Points, p)
	}
	return s
}

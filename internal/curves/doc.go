// Package curves draws training curves (loss, accuracy) to a PNG file and
// reads the JSON-lines metrics files they come from.
//
// # Overview
//
// A chart is a Panel: a title, a y-axis label and some Series, each a list
// of Points that carry both the optimizer step and the (fractional) epoch
// they were measured at, so the same data can be drawn against either.
// Render stacks the panels vertically in one PNG image, with aligned axes,
// a grid and a legend per panel, and writes it atomically:
//
//	loss := curves.Series{Name: "train", Points: []curves.Point{{Step: 100, Epoch: 0.2, Value: 0.9}, ...}}
//	err := curves.Render("runs/mlp/curves.png", []curves.Panel{{Title: "loss", YLabel: "loss", Series: []curves.Series{loss}}}, curves.Options{})
//
// ReadMetrics reads a metrics file (one flat JSON object per line) into
// Records, and SeriesOf picks one key out of them as a Series.
//
// # Robustness
//
// Points whose value (or, on an epoch axis, epoch) is NaN or infinite are
// left out; a series with one finite point is drawn as a marker; empty
// series and panels are drawn as empty axes. Render never leaves a partial
// file at path: it writes a temporary file in the same folder and renames
// it.
package curves

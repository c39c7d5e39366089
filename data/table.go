package data

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Limits on the CSV files ReadTable reads, so that a hostile file cannot
// make it allocate without bound: encoding/csv holds a whole line, and a
// slice entry per field, before ReadTable sees it.
const (
	// MaxTableLineBytes is the longest line of a CSV table, in bytes:
	// 4 MiB, room for MaxTableColumns numbers of 60 characters each.
	MaxTableLineBytes = 4 << 20
	// MaxTableColumns is the most columns (fields of a row) a CSV table
	// may have: 65536, far more than a model reading one feature per
	// column can use.
	MaxTableColumns = 1 << 16
)

// TableConfig says how ReadTable reads a CSV file: which column holds the
// label, which columns are features, and whether the label is a class or a
// real number.
//
// Columns are chosen by header name (when Header is set) or by index as
// decimal text: "0" is the first column, "3" the fourth, "-1" the last and
// "-2" the one before it. A name is looked up before an index, so with a
// header a column named "3" is chosen by "3". Note that indices count from
// 0, while messages number columns from 1 ("column 1" is index "0").
type TableConfig struct {
	// Label is the label column, by name or index. Required.
	Label string
	// Features are the feature columns, by name or index, in the order of
	// the feature vector. Nil or empty selects every column but the label
	// whose first value that is not missing is a number; the other columns
	// are left out and listed in Table.Ignored.
	Features []string
	// Header says that the first row (after SkipRows) names the columns.
	// Without a header the columns are called "column 1", "column 2", ...
	// in messages and can only be chosen by index.
	Header bool
	// SkipRows is the number of rows skipped before the header or the
	// first data row, e.g. 1 for scikit-learn's bundled files, which start
	// with a line like "150,4,setosa,versicolor,virginica". Blank lines are
	// not rows.
	SkipRows int
	// Regression says that the label is a real number (Table.Targets)
	// rather than a class (Table.Labels).
	Regression bool
	// Classes, when set, are the classes a label must be one of, in class
	// index order: the Classes of the training table, given when reading a
	// validation file. Unset, the classes are those found in the file.
	// Classes must be unset for regression.
	Classes []string
}

// Table is a CSV file read for training: one row per sample, a feature
// vector and a label (a class or, for regression, a real number) per row.
type Table struct {
	// Path is the file the table was read from.
	Path string
	// Columns are the names of all columns of the file, from the header or
	// "column 1", "column 2", ... without one (or for an empty name in the
	// header).
	Columns []string
	// Label is the name of the label column and LabelColumn its index in
	// Columns.
	Label       string
	LabelColumn int
	// Features are the names of the feature columns, in feature order, and
	// FeatureColumns their indices in Columns.
	Features       []string
	FeatureColumns []int
	// Ignored lists the columns left out of the features because they are
	// not numeric; only set when TableConfig.Features is empty.
	Ignored []string
	// X holds the feature values, row-major: row i is
	// X[i*len(Features) : (i+1)*len(Features)].
	X []float32
	// Regression says whether the label is a real number (Targets) rather
	// than a class (Labels).
	Regression bool
	// Labels holds the class index of each row (classification only): row
	// i is of class Classes[Labels[i]].
	Labels []int64
	// Targets holds the label of each row (regression only).
	Targets []float32
	// Classes are the class names in class index order (classification
	// only).
	Classes []string
	// Lines holds the line of the file each row starts on (1-based), for
	// messages.
	Lines []int
}

// Rows returns the number of rows.
func (t *Table) Rows() int { return len(t.Lines) }

// missing reports whether the trimmed field s stands for a missing value:
// empty, "NA", "NaN", "nan" or "?".
func missing(s string) bool {
	switch s {
	case "", "NA", "NaN", "nan", "?":
		return true
	}
	return false
}

// parseNumber parses the trimmed field s as a finite number that fits a
// float32, or returns what was wrong with it, phrased to follow "expected".
func parseNumber(s string) (float64, error) {
	if missing(s) {
		return 0, errors.New("missing value, expected a number")
	}
	if !decimalChars(s) {
		return 0, fmt.Errorf("expected a number, found %q", s)
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("expected a number, found %q", s)
	case math.IsInf(v, 0) || math.IsInf(float64(float32(v)), 0):
		return 0, fmt.Errorf("expected a finite number within ±%g, found %q", math.MaxFloat32, s)
	}
	return v, nil
}

// decimalChars reports whether every character of s may appear in a decimal
// number; ParseFloat also takes "inf", "0x1p3" and "1_000", which a CSV
// number is not.
func decimalChars(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return !strings.ContainsRune("0123456789+-.eE", r) })
}

// decimal returns the value of s if s is a finite decimal number.
func decimal(s string) (float64, bool) {
	if !decimalChars(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && !math.IsInf(v, 0)
}

// isNumber reports whether s is a finite number.
func isNumber(s string) bool {
	_, err := parseNumber(s)
	return err == nil
}

// classKey returns the name under which label s is counted: a number in its
// shortest form ("1.0" and "1" are both "1"), anything else as it is.
func classKey(s string) string {
	v, ok := decimal(s)
	if !ok {
		return s
	}
	if v == 0 {
		v = 0 // -0 is 0
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// record is one row of the file: its trimmed fields and the line it starts on.
type record struct {
	fields []string
	line   int
}

// ReadTable reads the CSV file at path as a table for training or
// validation. Fields are comma-separated (quoted as in encoding/csv) and
// trimmed of spaces; blank lines are skipped.
//
// Classes, unless cfg.Classes is set, are the distinct labels of the file,
// sorted numerically when every label is a number and as strings otherwise;
// labels equal as numbers ("1", "1.0") are one class, named in shortest
// form ("1"). A training file must have at least 2 classes.
//
// Every problem with the file is an error naming it, the line (1-based), and
// for a field its 1-based column number and, with a header, its name: e.g.
//
//	iris.csv:17:3 (column "petal_length"): expected a number, found "abc"
//
// Missing values (an empty field, "NA", "NaN", "nan", "?") in a feature or
// the label are errors. The file must be a regular file (a directory, a
// named pipe or a device is refused before it is opened), with lines of at
// most MaxTableLineBytes and rows of at most MaxTableColumns fields.
func ReadTable(path string, cfg TableConfig) (*Table, error) {
	if cfg.Label == "" {
		return nil, fmt.Errorf("%s: no label column given, expected TableConfig.Label to name one", path)
	}
	if cfg.SkipRows < 0 {
		return nil, fmt.Errorf("%s: SkipRows = %d, expected >= 0", path, cfg.SkipRows)
	}
	if cfg.Regression && len(cfg.Classes) > 0 {
		return nil, fmt.Errorf("%s: Classes is set for a regression table, expected no classes", path)
	}
	f, _, err := openRegular(path, "a CSV file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTable(path, f, cfg)
}

// readTable reads the table from r; path is only used in messages.
func readTable(path string, r io.Reader, cfg TableConfig) (*Table, error) {
	header, rows, err := readRecords(path, r, cfg)
	if err != nil {
		return nil, err
	}
	t := &Table{Path: path, Regression: cfg.Regression}
	ncol := len(rows[0].fields)
	if cfg.Header {
		ncol = len(header.fields)
		for i, name := range header.fields {
			if name == "" {
				name = fmt.Sprintf("column %d", i+1)
			}
			t.Columns = append(t.Columns, name)
		}
	} else {
		for i := range ncol {
			t.Columns = append(t.Columns, fmt.Sprintf("column %d", i+1))
		}
	}
	for _, row := range rows {
		if len(row.fields) != ncol {
			return nil, fmt.Errorf("%s:%d: expected %d fields, found %d", path, row.line, ncol, len(row.fields))
		}
	}
	if ncol < 2 {
		return nil, fmt.Errorf("%s: %d column, expected at least 2 (a label and a feature)", path, ncol)
	}

	if t.LabelColumn, err = t.column(cfg.Label, cfg.Header); err != nil {
		return nil, fmt.Errorf("%s: label %w", path, err)
	}
	t.Label = t.Columns[t.LabelColumn]
	if err := t.chooseFeatures(cfg, rows); err != nil {
		return nil, err
	}

	// With given classes, each label is checked as its row is read, so
	// that the first error in the file is the one reported.
	var index map[string]int64
	if len(cfg.Classes) > 0 {
		t.Classes = slices.Clone(cfg.Classes)
		if index, err = classIndex(path, t.Classes); err != nil {
			return nil, err
		}
	}
	nf := len(t.FeatureColumns)
	t.X = make([]float32, 0, len(rows)*nf)
	t.Lines = make([]int, 0, len(rows))
	var keys []string // the class key of each row, without given classes
	for _, row := range rows {
		for _, c := range t.FeatureColumns {
			v, err := parseNumber(row.fields[c])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.fieldPos(row.line, c, cfg.Header), err)
			}
			t.X = append(t.X, float32(v))
		}
		t.Lines = append(t.Lines, row.line)

		label := row.fields[t.LabelColumn]
		pos := func() string { return t.fieldPos(row.line, t.LabelColumn, cfg.Header) }
		switch {
		case cfg.Regression:
			v, err := parseNumber(label)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", pos(), err)
			}
			t.Targets = append(t.Targets, float32(v))
		case missing(label):
			return nil, fmt.Errorf("%s: missing value, expected a class label", pos())
		case index != nil:
			y, ok := index[classKey(label)]
			if !ok {
				return nil, fmt.Errorf("%s: class %q is not one of the %d classes %s", pos(), label, len(t.Classes), listClasses(t.Classes))
			}
			t.Labels = append(t.Labels, y)
		default:
			keys = append(keys, classKey(label))
		}
	}
	if keys != nil {
		t.Classes = sortClasses(keys)
		if len(t.Classes) < 2 {
			return nil, fmt.Errorf("%s: label column %q has %d class (%q), expected at least 2 classes to train on", path, t.Label, len(t.Classes), t.Classes[0])
		}
		index, _ := classIndex(path, t.Classes) // distinct keys
		t.Labels = make([]int64, len(keys))
		for i, k := range keys {
			t.Labels[i] = index[k]
		}
	}
	return t, nil
}

// readRecords reads the records of the file, skipping cfg.SkipRows rows and
// blank lines, and returns the header (if cfg.Header) and at least one data
// row.
func readRecords(path string, r io.Reader, cfg TableConfig) (header record, rows []record, err error) {
	cr := csv.NewReader(&lineLimiter{r: r, line: 1})
	cr.FieldsPerRecord = -1 // checked by readTable, with a better message
	cr.TrimLeadingSpace = true
	skipped := 0
	first := true
	for {
		fields, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			var le *longLineError
			switch {
			case errors.As(err, &pe):
				return header, nil, fmt.Errorf("%s:%d: %v (at character %d of the line)", path, pe.Line, pe.Err, pe.Column)
			case errors.As(err, &le):
				return header, nil, fmt.Errorf("%s:%d: %w", path, le.line, le)
			}
			return header, nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		if len(fields) > MaxTableColumns {
			return header, nil, fmt.Errorf("%s:%d: %d fields, more than the limit of %d columns (MaxTableColumns)", path, line, len(fields), MaxTableColumns)
		}
		if first && len(fields) > 0 {
			fields[0] = strings.TrimPrefix(fields[0], "\ufeff") // a byte order mark
			first = false
		}
		for i, s := range fields {
			fields[i] = strings.TrimSpace(s)
		}
		if len(fields) == 1 && fields[0] == "" {
			continue // a line of spaces
		}
		switch {
		case skipped < cfg.SkipRows:
			skipped++
		case cfg.Header && header.fields == nil:
			header = record{fields, line}
		default:
			rows = append(rows, record{fields, line})
		}
	}
	if len(rows) == 0 {
		what := "is empty"
		switch {
		case header.fields != nil:
			what = "has only a header"
		case skipped > 0:
			what = fmt.Sprintf("has only %d rows, all skipped (SkipRows = %d)", skipped, cfg.SkipRows)
		}
		return header, nil, fmt.Errorf("%s: no data rows, expected at least 1; the file %s", path, what)
	}
	return header, rows, nil
}

// lineLimiter passes r through, but fails with a *longLineError when a
// line is longer than MaxTableLineBytes, so that encoding/csv never
// buffers more than that.
type lineLimiter struct {
	r io.Reader
	// line is the number of the current line, from 1; run is the number
	// of its bytes read so far.
	line, run int
}

// Read reads from the underlying reader and checks the lines it read.
func (l *lineLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	rest := p[:n]
	for l.run <= MaxTableLineBytes {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.run += len(rest)
			break
		}
		l.run += i
		if l.run > MaxTableLineBytes {
			break
		}
		l.line++
		l.run = 0
		rest = rest[i+1:]
	}
	if l.run > MaxTableLineBytes {
		return 0, &longLineError{line: l.line}
	}
	return n, err
}

// longLineError is the error of a line longer than MaxTableLineBytes.
type longLineError struct{ line int }

// Error says what the limit is.
func (e *longLineError) Error() string {
	return fmt.Sprintf("line longer than %d bytes (MaxTableLineBytes), expected shorter lines of comma-separated values", MaxTableLineBytes)
}

// column returns the index of the column chosen by name or index s; the
// error completes "<what> ".
func (t *Table) column(s string, byName bool) (int, error) {
	n := len(t.Columns)
	if byName {
		var found []int
		for i, name := range t.Columns {
			if name == s {
				found = append(found, i)
			}
		}
		if len(found) > 1 {
			return 0, fmt.Errorf("column %q is ambiguous: %d columns have that name (columns %s)", s, len(found), joinInts(found, 1))
		}
		if len(found) == 1 {
			return found[0], nil
		}
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		if !byName {
			return 0, fmt.Errorf("column %q not found: the file has no header, so columns are chosen by index, expected 0..%d or -%d..-1", s, n-1, n)
		}
		return 0, fmt.Errorf("column %q not found; the columns are: %s", s, strings.Join(t.Columns, ", "))
	}
	if i < -n || i >= n {
		return 0, fmt.Errorf("column index %d is out of range, expected 0..%d or -%d..-1 for %d columns", i, n-1, n, n)
	}
	if i < 0 {
		i += n
	}
	return i, nil
}

// joinInts returns the numbers of xs plus add, comma-separated.
func joinInts(xs []int, add int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x + add)
	}
	return strings.Join(s, ", ")
}

// chooseFeatures sets Features, FeatureColumns and Ignored.
func (t *Table) chooseFeatures(cfg TableConfig, rows []record) error {
	if len(cfg.Features) > 0 {
		for _, s := range cfg.Features {
			c, err := t.column(s, cfg.Header)
			if err != nil {
				return fmt.Errorf("%s: feature %w", t.Path, err)
			}
			if c == t.LabelColumn {
				return fmt.Errorf("%s: feature %q is the label column %q, expected the label to be left out of the features", t.Path, s, t.Label)
			}
			if j := slices.Index(t.FeatureColumns, c); j >= 0 {
				return fmt.Errorf("%s: feature %q is column %q, already chosen as feature %q", t.Path, s, t.Columns[c], cfg.Features[j])
			}
			t.FeatureColumns = append(t.FeatureColumns, c)
			t.Features = append(t.Features, t.Columns[c])
		}
		return nil
	}
	for c, name := range t.Columns {
		if c == t.LabelColumn {
			continue
		}
		numeric := true // a column with no values at all fails as missing
		for _, row := range rows {
			if s := row.fields[c]; !missing(s) {
				numeric = isNumber(s)
				break
			}
		}
		if numeric {
			t.FeatureColumns = append(t.FeatureColumns, c)
			t.Features = append(t.Features, name)
		} else {
			t.Ignored = append(t.Ignored, name)
		}
	}
	if len(t.Features) == 0 {
		return fmt.Errorf("%s: no numeric feature columns, expected at least one; not numeric: %s", t.Path, strings.Join(t.Ignored, ", "))
	}
	return nil
}

// fieldPos returns "path:line:column" for column c of a row on line, plus the
// column's name when the file has a header.
func (t *Table) fieldPos(line, c int, header bool) string {
	pos := fmt.Sprintf("%s:%d:%d", t.Path, line, c+1)
	if header {
		pos += fmt.Sprintf(" (column %q)", t.Columns[c])
	}
	return pos
}

// classIndex returns the class index of each class key of classes.
func classIndex(path string, classes []string) (map[string]int64, error) {
	index := make(map[string]int64, len(classes))
	for i, c := range classes {
		k := classKey(strings.TrimSpace(c))
		if j, dup := index[k]; dup {
			return nil, fmt.Errorf("%s: Classes %q and %q are the same class, expected distinct classes", path, classes[j], c)
		}
		index[k] = int64(i)
	}
	return index, nil
}

// sortClasses returns the distinct keys, sorted numerically when all are
// numbers and as strings otherwise.
func sortClasses(keys []string) []string {
	classes := slices.Clone(keys)
	slices.Sort(classes)
	classes = slices.Compact(classes)
	value := make(map[string]float64, len(classes))
	for _, c := range classes {
		v, ok := decimal(c)
		if !ok {
			return classes
		}
		value[c] = v
	}
	slices.SortFunc(classes, func(a, b string) int { return cmp.Compare(value[a], value[b]) })
	return classes
}

// listClasses returns the classes quoted and comma-separated, at most 20.
func listClasses(classes []string) string {
	const most = 20
	var b strings.Builder
	for i, c := range classes {
		if i == most {
			fmt.Fprintf(&b, ", ... (%d more)", len(classes)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", c)
	}
	return b.String()
}

// Row returns the feature values, in the order of t.Features, of one CSV
// record with the columns of t's file, e.g. at prediction time. The record
// has either len(t.Columns) fields or len(t.Columns)-1 without the label
// column; the label's value, if present, is not read. Fields are trimmed of
// spaces. Row reads only t.Columns, t.Label, t.LabelColumn and
// t.FeatureColumns, so a Table holding just those (restored from a
// checkpoint, say) will do. Errors name the 1-based field number in the
// record and the column, e.g.
//
//	field 3 (column "petal_length"): expected a number, found "abc"
func (t *Table) Row(fields []string) ([]float32, error) {
	n := len(t.Columns)
	withLabel := len(fields) == n
	if !withLabel && len(fields) != n-1 {
		return nil, fmt.Errorf("expected %d fields (or %d without the label column %q), found %d", n, n-1, t.Label, len(fields))
	}
	out := make([]float32, len(t.FeatureColumns))
	for j, c := range t.FeatureColumns {
		k := c // the field of column c
		if !withLabel && c > t.LabelColumn {
			k--
		}
		v, err := parseNumber(strings.TrimSpace(fields[k]))
		if err != nil {
			return nil, fmt.Errorf("field %d (column %q): %w", k+1, t.Columns[c], err)
		}
		out[j] = float32(v)
	}
	return out, nil
}

// subset returns a table of the rows of t at rows, in that order, sharing
// nothing with t.
func (t *Table) subset(rows []int) *Table {
	nf := len(t.FeatureColumns)
	s := &Table{
		Path: t.Path, Columns: slices.Clone(t.Columns),
		Label: t.Label, LabelColumn: t.LabelColumn,
		Features: slices.Clone(t.Features), FeatureColumns: slices.Clone(t.FeatureColumns),
		Ignored: slices.Clone(t.Ignored), Regression: t.Regression, Classes: slices.Clone(t.Classes),
		X: make([]float32, 0, len(rows)*nf), Lines: make([]int, 0, len(rows)),
	}
	for _, i := range rows {
		s.X = append(s.X, t.X[i*nf:(i+1)*nf]...)
		s.Lines = append(s.Lines, t.Lines[i])
		if t.Regression {
			s.Targets = append(s.Targets, t.Targets[i])
		} else {
			s.Labels = append(s.Labels, t.Labels[i])
		}
	}
	return s
}

// Split divides the rows of t into a training and a validation table, the
// validation table taking about fraction of the rows; both keep the rows in
// file order and share no memory with t. The choice of rows is a pure
// function of (t, fraction, seed).
//
// A classification table is split by class: a class of n ≥ 2 rows gives
// round(fraction×n) of them, but at least 1 and at most n-1, to validation,
// so both sides have every such class; a class of one row stays in
// training. A regression table gives round(fraction×n) of its n rows, but
// at least 1 and at most n-1, to validation.
//
// Split returns an error if fraction is not in (0, 1) or the validation
// table would be empty (fewer than 2 rows, or no class with 2 rows). t must
// be consistent, as ReadTable returns it: Split panics on a label outside
// [0, len(t.Classes)).
func (t *Table) Split(fraction float64, seed uint64) (train, val *Table, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, nil, fmt.Errorf("%s: Split: fraction %g, expected a number in (0, 1)", t.Path, fraction)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	var groups [][]int // the rows of each class, or all rows
	if t.Regression {
		groups = [][]int{make([]int, t.Rows())}
		for i := range groups[0] {
			groups[0][i] = i
		}
	} else {
		groups = make([][]int, len(t.Classes))
		for i, y := range t.Labels {
			groups[y] = append(groups[y], i)
		}
	}
	var trainRows, valRows []int
	for _, g := range groups {
		n := len(g)
		k := 0
		if n >= 2 {
			k = min(max(int(math.Round(fraction*float64(n))), 1), n-1)
		}
		rng.Shuffle(n, func(i, j int) { g[i], g[j] = g[j], g[i] })
		valRows = append(valRows, g[:k]...)
		trainRows = append(trainRows, g[k:]...)
	}
	if len(valRows) == 0 {
		what := fmt.Sprintf("%d rows", t.Rows())
		if !t.Regression {
			what = "no class with 2 rows or more"
		}
		return nil, nil, fmt.Errorf("%s: Split: the validation table would be empty, expected a table with 2 rows or more in some class; found %s", t.Path, what)
	}
	slices.Sort(trainRows)
	slices.Sort(valRows)
	return t.subset(trainRows), t.subset(valRows), nil
}

// Dataset returns the table as an InMemory dataset of samples of shape
// [len(t.Features)], sharing t.X (not copied).
//
// For a classification table the labels are t.Labels and there are
// len(t.Classes) classes. For a regression table every label is 0 and
// Classes is 1: the caller reads the target of sample i from t.Targets[i]
// (Batch.Indices give the sample indices of a batch).
func (t *Table) Dataset() (*InMemory, error) {
	shape := []int{len(t.Features)}
	if t.Regression {
		return NewInMemory(t.X, make([]int64, t.Rows()), shape, 1)
	}
	return NewInMemory(t.X, t.Labels, shape, len(t.Classes))
}

// Standardizer rescales each feature to mean 0 and standard deviation 1:
// feature j becomes (x - Mean[j]) / Std[j]. Fit it on the training table and
// apply it to the training, validation and prediction features alike; it
// is plain data, so it can be saved beside a checkpoint.
type Standardizer struct {
	// Mean and Std hold the mean and standard deviation of each feature.
	Mean, Std []float64
}

// FitStandardizer returns the mean and the population standard deviation of
// each feature of t, computed in float64. A constant feature (or a table
// with no rows) gets Std 1, so that Apply leaves it centred rather than
// dividing by zero.
func FitStandardizer(t *Table) Standardizer {
	return FitStandardizerOf(t.X, len(t.Features))
}

// FitStandardizerOf is FitStandardizer for any rows of numbers: x holds
// rows of nf values, row-major (a regression's targets are rows of one
// value).
func FitStandardizerOf(x []float32, nf int) Standardizer {
	n := 0
	if nf > 0 {
		n = len(x) / nf
	}
	s := Standardizer{Mean: make([]float64, nf), Std: make([]float64, nf)}
	for j := range nf {
		var sum float64
		constant := true
		for i := range n {
			v := x[i*nf+j]
			sum += float64(v)
			constant = constant && v == x[j]
		}
		if n == 0 || constant {
			s.Std[j] = 1
			if n > 0 {
				s.Mean[j] = float64(x[j])
			}
			continue
		}
		mean := sum / float64(n)
		var ss float64
		for i := range n {
			d := float64(x[i*nf+j]) - mean
			ss += d * d
		}
		s.Mean[j] = mean
		s.Std[j] = math.Sqrt(ss / float64(n))
	}
	return s
}

// Apply standardizes x in place: x holds any number of rows of len(s.Mean)
// features, row-major, e.g. Table.X or one row from Table.Row. It panics if
// s has no features or len(x) is not a multiple of len(s.Mean).
func (s Standardizer) Apply(x []float32) {
	nf := len(s.Mean)
	if nf == 0 || len(s.Std) != nf {
		panic(fmt.Sprintf("data: Standardizer.Apply: %d means and %d standard deviations, expected the same number > 0", nf, len(s.Std)))
	}
	if len(x)%nf != 0 {
		panic(fmt.Sprintf("data: Standardizer.Apply: len(x) = %d, expected a multiple of %d features", len(x), nf))
	}
	for i, v := range x {
		j := i % nf
		x[i] = float32((float64(v) - s.Mean[j]) / s.Std[j])
	}
}

// OpenCSV opens the CSV table at path for a reader that goes through its
// records itself (predict reads rows against a trained run's columns):
// path must be a regular file, and the reader fails on a line longer
// than MaxTableLineBytes, as LoadTable does. Close the returned file
// when done.
func OpenCSV(path string) (*csv.Reader, io.Closer, error) {
	f, _, err := openRegular(path, "a CSV table")
	if err != nil {
		return nil, nil, err
	}
	r := csv.NewReader(&lineLimiter{r: f, line: 1})
	r.FieldsPerRecord = -1
	return r, f, nil
}

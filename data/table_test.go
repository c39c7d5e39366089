package data

import (
	"fmt"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hora-dl/hora/internal/fuzzbound"
)

// writeCSV writes content to f.csv in a fresh temporary directory and
// returns its path.
func writeCSV(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.csv")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestReadTableHeader(t *testing.T) {
	t.Parallel()
	path := writeCSV(t, "id, x1 ,x2,colour,label\n"+
		"a, 1 ,10,red,cat\n"+
		"\n"+
		"b,2,20,blue,dog\n"+
		"   \n"+
		"\"c\",3,30,red, cat \n"+
		"d,4,4e1,green,bird\n")
	tab, err := ReadTable(path, TableConfig{Label: "label", Header: true})
	require.NoError(t, err)
	assert.Equal(t, path, tab.Path)
	assert.Equal(t, []string{"id", "x1", "x2", "colour", "label"}, tab.Columns)
	assert.Equal(t, "label", tab.Label)
	assert.Equal(t, 4, tab.LabelColumn)
	assert.Equal(t, []string{"x1", "x2"}, tab.Features)
	assert.Equal(t, []int{1, 2}, tab.FeatureColumns)
	assert.Equal(t, []string{"id", "colour"}, tab.Ignored)
	assert.Equal(t, []float32{1, 10, 2, 20, 3, 30, 4, 40}, tab.X)
	assert.False(t, tab.Regression)
	assert.Equal(t, []string{"bird", "cat", "dog"}, tab.Classes)
	assert.Equal(t, []int64{1, 2, 1, 0}, tab.Labels)
	assert.Nil(t, tab.Targets)
	assert.Equal(t, []int{2, 4, 6, 7}, tab.Lines)
	assert.Equal(t, 4, tab.Rows())
}

func TestReadTableChosenFeatures(t *testing.T) {
	t.Parallel()
	path := writeCSV(t, "a,b,c,d\n1,2,3,x\n4,5,6,y\n")
	// By name and by index (from the end), in the order given; with a
	// header a name is looked up before an index.
	tab, err := ReadTable(path, TableConfig{Label: "d", Features: []string{"c", "0"}, Header: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "a"}, tab.Features)
	assert.Equal(t, []int{2, 0}, tab.FeatureColumns)
	assert.Nil(t, tab.Ignored)
	assert.Equal(t, []float32{3, 1, 6, 4}, tab.X)
	assert.Equal(t, []int64{0, 1}, tab.Labels)

	tab, err = ReadTable(path, TableConfig{Label: "-1", Features: []string{"-2"}, Header: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, tab.Features)
	assert.Equal(t, "d", tab.Label)
}

func TestReadTableNumericClasses(t *testing.T) {
	t.Parallel()
	// Labels equal as numbers are one class, named in shortest form, and
	// the classes are sorted as numbers ("10" after "9").
	path := writeCSV(t, "1,0\n2,10\n3,9\n4,1.0\n5,1\n6,2\n7,1e1\n8,-0\n")
	tab, err := ReadTable(path, TableConfig{Label: "-1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"column 1", "column 2"}, tab.Columns)
	assert.Equal(t, []string{"column 1"}, tab.Features)
	assert.Equal(t, []string{"0", "1", "2", "9", "10"}, tab.Classes)
	assert.Equal(t, []int64{0, 4, 3, 1, 1, 2, 4, 0}, tab.Labels)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, tab.X)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, tab.Lines)
}

func TestReadTableMixedClassesSortAsStrings(t *testing.T) {
	t.Parallel()
	path := writeCSV(t, "1,b\n2,10\n3,9\n4,a\n")
	tab, err := ReadTable(path, TableConfig{Label: "1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10", "9", "a", "b"}, tab.Classes)
	assert.Equal(t, []int64{3, 0, 1, 2}, tab.Labels)
}

func TestReadTableGivenClasses(t *testing.T) {
	t.Parallel()
	// A validation file need not have every class, and "1.0" is class "1".
	path := writeCSV(t, "x,y\n0.5,1.0\n1.5,2\n2.5,2\n")
	classes := []string{"0", "1", "2"}
	tab, err := ReadTable(path, TableConfig{Label: "y", Header: true, Classes: classes})
	require.NoError(t, err)
	assert.Equal(t, classes, tab.Classes)
	assert.Equal(t, []int64{1, 2, 2}, tab.Labels)
	assert.Equal(t, []float32{0.5, 1.5, 2.5}, tab.X)

	// The order of the given classes is the class order.
	path = writeCSV(t, "x,y\n1,cat\n2,dog\n")
	tab, err = ReadTable(path, TableConfig{Label: "y", Header: true, Classes: []string{"dog", "cat"}})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, tab.Labels)
}

func TestReadTableRegression(t *testing.T) {
	t.Parallel()
	// scikit-learn's format: a count line, then a quoted header.
	path := writeCSV(t, "3,2,,\n\"A\",\"B\",\"MEDV\"\n1,2,24\n3,4,21.6\n5,6,34.7\n")
	tab, err := ReadTable(path, TableConfig{Label: "MEDV", Header: true, SkipRows: 1, Regression: true})
	require.NoError(t, err)
	assert.True(t, tab.Regression)
	assert.Equal(t, []string{"A", "B"}, tab.Features)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, tab.X)
	assert.Equal(t, []float32{24, 21.6, 34.7}, tab.Targets)
	assert.Nil(t, tab.Labels)
	assert.Nil(t, tab.Classes)
	assert.Equal(t, []int{3, 4, 5}, tab.Lines)
}

func TestReadTableByteOrderMark(t *testing.T) {
	t.Parallel()
	path := writeCSV(t, "\ufeffa,b\n1,x\n2,y\n")
	tab, err := ReadTable(path, TableConfig{Label: "b", Features: []string{"a"}, Header: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, tab.Columns)
}

func TestReadTableErrors(t *testing.T) {
	t.Parallel()
	hdr := TableConfig{Label: "c", Header: true}
	tests := []struct {
		name    string
		content string
		cfg     TableConfig
		want    string // F stands for the file's path
	}{
		{"empty file", "", hdr, "F: no data rows, expected at least 1; the file is empty"},
		{"blank lines only", "\n  \n\n", hdr, "F: no data rows, expected at least 1; the file is empty"},
		{"header only", "a,b,c\n", hdr, "F: no data rows, expected at least 1; the file has only a header"},
		{"skipped rows only", "3,2\n", TableConfig{Label: "0", SkipRows: 1}, "F: no data rows, expected at least 1; the file has only 1 rows, all skipped (SkipRows = 1)"},
		{"ragged row", "a,b,c\n1,2,x\n\n3,4\n", hdr, "F:4: expected 3 fields, found 2"},
		{"ragged row without header", "1,2,x\n3,4,y,5\n", TableConfig{Label: "2"}, "F:2: expected 3 fields, found 4"},
		{"ragged after skipped rows", "150,4,a,b,c\n1,2,x\n1,2\n", TableConfig{Label: "2", SkipRows: 1}, "F:3: expected 3 fields, found 2"},
		{"one column", "a\n1\n", TableConfig{Label: "a", Header: true}, "F: 1 column, expected at least 2 (a label and a feature)"},
		{"csv syntax", "a,b,c\n1,2 \"x\",y\n", hdr, "F:2: bare \" in non-quoted-field (at character 5 of the line)"},
		{"no label given", "a,b,c\n1,2,x\n", TableConfig{Header: true}, "F: no label column given, expected TableConfig.Label to name one"},
		{"negative SkipRows", "a,b,c\n1,2,x\n", TableConfig{Label: "c", SkipRows: -1}, "F: SkipRows = -1, expected >= 0"},
		{"classes for regression", "a,b,c\n1,2,3\n", TableConfig{Label: "c", Header: true, Regression: true, Classes: []string{"x"}},
			"F: Classes is set for a regression table, expected no classes"},
		{"label not found", "a,b,c\n1,2,x\n", TableConfig{Label: "species", Header: true},
			`F: label column "species" not found; the columns are: a, b, c`},
		{"label index out of range", "a,b,c\n1,2,x\n", TableConfig{Label: "3", Header: true},
			"F: label column index 3 is out of range, expected 0..2 or -3..-1 for 3 columns"},
		{"label index out of range from the end", "1,2,x\n", TableConfig{Label: "-4"},
			"F: label column index -4 is out of range, expected 0..2 or -3..-1 for 3 columns"},
		{"label by name without header", "1,2,x\n", TableConfig{Label: "c"},
			`F: label column "c" not found: the file has no header, so columns are chosen by index, expected 0..2 or -3..-1`},
		{"ambiguous label name", "a,b,b\n1,2,x\n", TableConfig{Label: "b", Header: true},
			`F: label column "b" is ambiguous: 2 columns have that name (columns 2, 3)`},
		{"feature not found", "a,b,c\n1,2,x\n", TableConfig{Label: "c", Features: []string{"a", "d"}, Header: true},
			`F: feature column "d" not found; the columns are: a, b, c`},
		{"feature index out of range", "a,b,c\n1,2,x\n", TableConfig{Label: "c", Features: []string{"5"}, Header: true},
			"F: feature column index 5 is out of range, expected 0..2 or -3..-1 for 3 columns"},
		{"label among features", "a,b,c\n1,2,x\n", TableConfig{Label: "c", Features: []string{"a", "c"}, Header: true},
			`F: feature "c" is the label column "c", expected the label to be left out of the features`},
		{"label among features by index", "a,b,c\n1,2,x\n", TableConfig{Label: "c", Features: []string{"-1"}, Header: true},
			`F: feature "-1" is the label column "c", expected the label to be left out of the features`},
		{"feature twice", "a,b,c\n1,2,x\n", TableConfig{Label: "c", Features: []string{"a", "b", "0"}, Header: true},
			`F: feature "0" is column "a", already chosen as feature "a"`},
		{"no numeric features", "a,b,c\nx,y,z\n", hdr, "F: no numeric feature columns, expected at least one; not numeric: a, b"},
		{"not a number", "sepal,petal_width,petal_length,species\n1,2,3,x\n1,2,abc,y\n", TableConfig{Label: "species", Header: true},
			`F:3:3 (column "petal_length"): expected a number, found "abc"`},
		{"not a number without header", "1,2,x\n1,abc,y\n", TableConfig{Label: "2"}, `F:2:2: expected a number, found "abc"`},
		{"not a number in chosen feature", "a,b,c\n1,2,x\n1,2,y\n", TableConfig{Label: "a", Features: []string{"c"}, Header: true},
			`F:2:3 (column "c"): expected a number, found "x"`},
		{"infinity", "a,b,c\n1,2,x\n1,inf,y\n", hdr, `F:3:2 (column "b"): expected a number, found "inf"`},
		{"hexadecimal", "a,b,c\n1,2,x\n0x10,2,y\n", hdr, `F:3:1 (column "a"): expected a number, found "0x10"`},
		{"beyond float32", "a,b,c\n1,2,x\n1e39,2,y\n", hdr, `F:3:1 (column "a"): expected a finite number within ±3.4028234663852886e+38, found "1e39"`},
		{"empty feature", "a,b,c\n1,2,x\n,2,y\n", hdr, `F:3:1 (column "a"): missing value, expected a number`},
		{"NA feature", "a,b,c\n1,2,x\n1,NA,y\n", hdr, `F:3:2 (column "b"): missing value, expected a number`},
		{"NaN feature", "a,b,c\n1,NaN,x\n", hdr, `F:2:2 (column "b"): missing value, expected a number`},
		{"nan feature", "a,b,c\n1,nan,x\n", hdr, `F:2:2 (column "b"): missing value, expected a number`},
		{"? feature", "a,b,c\n1,2,x\n1, ? ,y\n", hdr, `F:3:2 (column "b"): missing value, expected a number`},
		{"first value missing", "a,b,c\nNA,2,x\n1,2,y\n", hdr, `F:2:1 (column "a"): missing value, expected a number`},
		{"missing label", "a,b,c\n1,2,x\n1,2,\n", hdr, `F:3:3 (column "c"): missing value, expected a class label`},
		{"NA label", "1,2,x\n1,2,NA\n", TableConfig{Label: "-1"}, `F:2:3: missing value, expected a class label`},
		{"missing target", "a,b,c\n1,2,3\n1,2,?\n", TableConfig{Label: "c", Header: true, Regression: true},
			`F:3:3 (column "c"): missing value, expected a number`},
		{"non-numeric target", "a,b,c\n1,2,3\n1,2,x\n", TableConfig{Label: "c", Header: true, Regression: true},
			`F:3:3 (column "c"): expected a number, found "x"`},
		{"label not in classes", "a,b,c\n1,2,x\n1,2,z\n", TableConfig{Label: "c", Header: true, Classes: []string{"x", "y"}},
			`F:3:3 (column "c"): class "z" is not one of the 2 classes "x", "y"`},
		{"number not in classes", "1,2,0\n1,2,3\n", TableConfig{Label: "2", Classes: []string{"0", "1", "2"}},
			`F:2:3: class "3" is not one of the 3 classes "0", "1", "2"`},
		{"first error in file order", "a,b,c\n1,2,\n1,abc,y\n", hdr, `F:2:3 (column "c"): missing value, expected a class label`},
		{"first error in file order with classes", "a,b,c\n1,2,z\n1,abc,x\n", TableConfig{Label: "c", Header: true, Classes: []string{"x", "y"}},
			`F:2:3 (column "c"): class "z" is not one of the 2 classes "x", "y"`},
		{"duplicate classes", "1,2,0\n", TableConfig{Label: "2", Classes: []string{"0", "1", "1.0"}},
			`F: Classes "1" and "1.0" are the same class, expected distinct classes`},
		{"one class", "a,b,c\n1,2,x\n3,4,x\n", hdr, `F: label column "c" has 1 class ("x"), expected at least 2 classes to train on`},
		{"one numeric class", "1,2,1\n3,4,1.0\n", TableConfig{Label: "-1"}, `F: label column "column 3" has 1 class ("1"), expected at least 2 classes to train on`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeCSV(t, tt.content)
			tab, err := ReadTable(path, tt.cfg)
			require.Error(t, err)
			assert.Nil(t, tab)
			assert.Equal(t, strings.ReplaceAll(tt.want, "F", path), err.Error())
		})
	}
}

func TestReadTableUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missingPath := filepath.Join(dir, "nope.csv")
	_, err := ReadTable(missingPath, TableConfig{Label: "0"})
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), missingPath)

	// A directory is refused before it is opened.
	_, err = ReadTable(dir, TableConfig{Label: "0"})
	assert.EqualError(t, err, dir+" is a directory, expected a CSV file")
}

// rowTable returns a table of columns a, lab, b, c whose label is lab and
// whose features are c and a, in that order.
func rowTable(t *testing.T) *Table {
	t.Helper()
	path := writeCSV(t, "a,lab,b,c\n1,x,2,3\n4,y,5,6\n")
	tab, err := ReadTable(path, TableConfig{Label: "lab", Features: []string{"c", "a"}, Header: true})
	require.NoError(t, err)
	return tab
}

func TestTableRow(t *testing.T) {
	t.Parallel()
	tab := rowTable(t)
	x, err := tab.Row([]string{"7", "anything", "8", " 9 "})
	require.NoError(t, err)
	assert.Equal(t, []float32{9, 7}, x)
	x, err = tab.Row([]string{"7", "8", "9"}) // without the label
	require.NoError(t, err)
	assert.Equal(t, []float32{9, 7}, x)
}

func TestTableRowFromSavedColumns(t *testing.T) {
	t.Parallel()
	tab := &Table{Columns: []string{"a", "lab", "b", "c"}, Label: "lab", LabelColumn: 1, FeatureColumns: []int{3, 0}}
	x, err := tab.Row([]string{"7", "8", "9"})
	require.NoError(t, err)
	assert.Equal(t, []float32{9, 7}, x)
}

func TestTableRowErrors(t *testing.T) {
	t.Parallel()
	tab := rowTable(t)
	tests := []struct {
		fields []string
		want   string
	}{
		{[]string{"1", "2"}, `expected 4 fields (or 3 without the label column "lab"), found 2`},
		{[]string{"1", "x", "2", "3", "4"}, `expected 4 fields (or 3 without the label column "lab"), found 5`},
		{[]string{"1", "x", "2", "abc"}, `field 4 (column "c"): expected a number, found "abc"`},
		{[]string{"1", "2", "abc"}, `field 3 (column "c"): expected a number, found "abc"`},
		{[]string{"NA", "x", "2", "3"}, `field 1 (column "a"): missing value, expected a number`},
		{[]string{"1", "2", ""}, `field 3 (column "c"): missing value, expected a number`},
	}
	for _, tt := range tests {
		x, err := tab.Row(tt.fields)
		assert.Nil(t, x)
		if assert.Error(t, err, "fields %q", tt.fields) {
			assert.Equal(t, tt.want, err.Error(), "fields %q", tt.fields)
		}
	}
}

// splitTable returns a classification table with the given number of rows
// per class, in blocks by class; the one feature of each row is its line,
// 10 + its index.
func splitTable(counts ...int) *Table {
	tab := &Table{Path: "s.csv", Columns: []string{"x", "y"}, Label: "y", LabelColumn: 1,
		Features: []string{"x"}, FeatureColumns: []int{0}}
	for c, n := range counts {
		tab.Classes = append(tab.Classes, fmt.Sprint("class", c))
		for range n {
			tab.Labels = append(tab.Labels, int64(c))
		}
	}
	for i := range tab.Labels {
		tab.Lines = append(tab.Lines, 10+i)
		tab.X = append(tab.X, float32(10+i))
	}
	return tab
}

// checkSplit checks that train and val hold the rows of tab, each once, in
// file order, with their features and labels.
func checkSplit(t *testing.T, tab, train, val *Table) {
	t.Helper()
	all := append(slices.Clone(train.Lines), val.Lines...)
	slices.Sort(all)
	assert.Equal(t, tab.Lines, all, "train and val together should hold every row once")
	for _, s := range []*Table{train, val} {
		assert.True(t, slices.IsSorted(s.Lines), "rows in file order")
		assert.Equal(t, tab.Features, s.Features)
		assert.Equal(t, tab.Classes, s.Classes)
		for i, line := range s.Lines {
			j := line - 10 // the row of tab
			assert.Equal(t, float32(line), s.X[i])
			if tab.Regression {
				assert.Equal(t, tab.Targets[j], s.Targets[i])
			} else {
				assert.Equal(t, tab.Labels[j], s.Labels[i])
			}
		}
	}
}

// classCounts returns the number of rows of each class of tab.
func classCounts(tab *Table) []int {
	counts := make([]int, len(tab.Classes))
	for _, y := range tab.Labels {
		counts[y]++
	}
	return counts
}

func TestTableSplitStratified(t *testing.T) {
	t.Parallel()
	tab := splitTable(10, 5, 2, 1)
	tests := []struct {
		fraction float64
		val      []int // rows of each class in val
	}{
		// round(0.2×10) = 2, round(0.2×5) = 1, round(0.4) = 0 → 1, single row → train.
		{0.2, []int{2, 1, 1, 0}},
		// round(9) = 9, round(4.5) = 5 → 4 (n-1), round(1.8) = 2 → 1.
		{0.9, []int{9, 4, 1, 0}},
		{0.5, []int{5, 3, 1, 0}},
	}
	for _, tt := range tests {
		train, val, err := tab.Split(tt.fraction, 7)
		require.NoError(t, err)
		assert.Equal(t, tt.val, classCounts(val), "fraction %g", tt.fraction)
		want := []int{10, 5, 2, 1}
		for c := range want {
			want[c] -= tt.val[c]
		}
		assert.Equal(t, want, classCounts(train), "fraction %g", tt.fraction)
		checkSplit(t, tab, train, val)
	}

	// Deterministic in the seed, and the seed matters.
	_, a, err := tab.Split(0.3, 1)
	require.NoError(t, err)
	_, b, err := tab.Split(0.3, 1)
	require.NoError(t, err)
	_, c, err := tab.Split(0.3, 2)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a.Lines, c.Lines)
}

func TestTableSplitRegression(t *testing.T) {
	t.Parallel()
	tab := &Table{Path: "r.csv", Columns: []string{"x", "y"}, Label: "y", LabelColumn: 1,
		Features: []string{"x"}, FeatureColumns: []int{0}, Regression: true}
	for i := range 10 {
		tab.Lines = append(tab.Lines, 10+i)
		tab.X = append(tab.X, float32(10+i))
		tab.Targets = append(tab.Targets, float32(i)/2)
	}
	train, val, err := tab.Split(0.25, 3) // round(2.5) = 3
	require.NoError(t, err)
	assert.Len(t, val.Lines, 3)
	assert.Len(t, train.Lines, 7)
	assert.Nil(t, val.Labels)
	checkSplit(t, tab, train, val)

	_, val2, err := tab.Split(0.25, 3)
	require.NoError(t, err)
	assert.Equal(t, val, val2)

	train, val, err = tab.Split(0.01, 3) // at least 1
	require.NoError(t, err)
	assert.Len(t, val.Lines, 1)
	assert.Len(t, train.Lines, 9)
	train, val, err = tab.Split(0.99, 3) // at most n-1
	require.NoError(t, err)
	assert.Len(t, val.Lines, 9)
	assert.Len(t, train.Lines, 1)
}

func TestTableSplitErrors(t *testing.T) {
	t.Parallel()
	tab := splitTable(3, 3)
	for _, f := range []float64{0, 1, -0.5, 1.5, math.NaN()} {
		_, _, err := tab.Split(f, 1)
		if assert.Error(t, err, "fraction %g", f) {
			assert.Equal(t, fmt.Sprintf("s.csv: Split: fraction %g, expected a number in (0, 1)", f), err.Error())
		}
	}
	_, _, err := splitTable(1, 1).Split(0.5, 1)
	require.EqualError(t, err, "s.csv: Split: the validation table would be empty, expected a table with 2 rows or more in some class; found no class with 2 rows or more")

	one := &Table{Path: "r.csv", Features: []string{"x"}, FeatureColumns: []int{0}, Regression: true,
		X: []float32{1}, Targets: []float32{2}, Lines: []int{1}}
	_, _, err = one.Split(0.5, 1)
	require.EqualError(t, err, "r.csv: Split: the validation table would be empty, expected a table with 2 rows or more in some class; found 1 rows")
}

func TestStandardizer(t *testing.T) {
	t.Parallel()
	tab := &Table{Features: []string{"a", "b", "c"}, Lines: []int{1, 2, 3, 4},
		X: []float32{
			1, 5, 0.1,
			2, 5, 0.1,
			3, 5, 0.1,
			4, 5, 0.1,
		}}
	s := FitStandardizer(tab)
	// Column a: mean 2.5, population variance (2.25+0.25+0.25+2.25)/4 = 1.25.
	// Columns b and c are constant: Std 1, Mean the value.
	assert.Equal(t, []float64{2.5, 5, float64(float32(0.1))}, s.Mean)
	assert.InDelta(t, math.Sqrt(1.25), s.Std[0], 1e-15)
	assert.Equal(t, []float64{1, 1}, s.Std[1:])

	s.Apply(tab.X)
	z := 1.5 / math.Sqrt(1.25) // 1.3416407864998738
	want := []float64{-z, 0, 0, -z / 3, 0, 0, z / 3, 0, 0, z, 0, 0}
	for i, w := range want {
		assert.InDelta(t, w, tab.X[i], 1e-6, "X[%d]", i)
	}

	row := []float32{2.5, 7, 0.1}
	s.Apply(row)
	assert.Equal(t, []float32{0, 2, 0}, row)

	assert.PanicsWithValue(t, "data: Standardizer.Apply: len(x) = 4, expected a multiple of 3 features", func() { s.Apply(make([]float32, 4)) })
	assert.Panics(t, func() { Standardizer{}.Apply(make([]float32, 4)) })

	empty := FitStandardizer(&Table{Features: []string{"a"}})
	assert.Equal(t, Standardizer{Mean: []float64{0}, Std: []float64{1}}, empty)
}

func TestTableDataset(t *testing.T) {
	t.Parallel()
	path := writeCSV(t, "a,b,y\n1,2,cat\n3,4,dog\n5,6,bird\n")
	tab, err := ReadTable(path, TableConfig{Label: "y", Header: true})
	require.NoError(t, err)
	ds, err := tab.Dataset()
	require.NoError(t, err)
	assert.Equal(t, 3, ds.Len())
	assert.Equal(t, []int{2}, ds.SampleShape())
	assert.Equal(t, 3, ds.Classes)
	dst := make([]float32, 2)
	assert.Equal(t, int64(2), ds.Sample(1, dst)) // dog
	assert.Equal(t, []float32{3, 4}, dst)

	tab, err = ReadTable(path, TableConfig{Label: "b", Features: []string{"a"}, Header: true, Regression: true})
	require.NoError(t, err)
	ds, err = tab.Dataset()
	require.NoError(t, err)
	assert.Equal(t, 3, ds.Len())
	assert.Equal(t, []int{1}, ds.SampleShape())
	assert.Equal(t, 1, ds.Classes)
	assert.Equal(t, []int64{0, 0, 0}, ds.Y)
	assert.Equal(t, []float32{2, 4, 6}, tab.Targets)
}

// sklearnData is where Debian's python3-sklearn installs its bundled data.
const sklearnData = "/usr/lib/python3/dist-packages/sklearn/datasets/data"

func TestReadTableSklearnFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file           string
		cfg            TableConfig
		rows, features int
		counts         []int // rows per class; nil for regression
		firstX         float32
		firstLabel     float32 // the label (class index or target) of row 0
	}{
		{"iris.csv", TableConfig{Label: "-1", SkipRows: 1}, 150, 4, []int{50, 50, 50}, 5.1, 0},
		{"wine_data.csv", TableConfig{Label: "-1", SkipRows: 1}, 178, 13, []int{59, 71, 48}, 14.23, 0},
		{"breast_cancer.csv", TableConfig{Label: "-1", SkipRows: 1}, 569, 30, []int{212, 357}, 17.99, 0},
		{"boston_house_prices.csv", TableConfig{Label: "MEDV", Header: true, SkipRows: 1, Regression: true}, 506, 13, nil, 0.00632, 24},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(sklearnData, tt.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not installed (apt-get install python3-sklearn): %v", path, err)
			}
			tab, err := ReadTable(path, tt.cfg)
			require.NoError(t, err)
			assert.Equal(t, tt.rows, tab.Rows())
			assert.Len(t, tab.Features, tt.features)
			assert.Len(t, tab.X, tt.rows*tt.features)
			assert.Empty(t, tab.Ignored)
			assert.Equal(t, tt.firstX, tab.X[0])
			if tt.counts == nil {
				assert.Equal(t, tt.firstLabel, tab.Targets[0])
				assert.Equal(t, "CRIM", tab.Features[0])
				assert.Equal(t, 3, tab.Lines[0])
				return
			}
			assert.Equal(t, tt.counts, classCounts(tab))
			assert.Equal(t, int64(tt.firstLabel), tab.Labels[0])
			assert.Equal(t, 2, tab.Lines[0])
			for c, name := range tab.Classes {
				assert.Equal(t, fmt.Sprint(c), name)
			}
			train, val, err := tab.Split(0.2, 1)
			require.NoError(t, err)
			assert.Equal(t, tt.rows, train.Rows()+val.Rows())
		})
	}
}

// ExampleReadTable reads a small CSV file of flowers (a comment line, a
// header, four numeric features and the species), keeps a third of each
// species for validation, standardizes the features with the statistics of
// the training rows, and prepares one new flower for prediction.
func ExampleReadTable() {
	tab, err := ReadTable("testdata/table/flowers.csv", TableConfig{Label: "species", Header: true, SkipRows: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("features:", tab.Features)
	fmt.Println("classes:", tab.Classes)
	fmt.Println("rows:", tab.Rows(), "labels:", tab.Labels)

	train, val, err := tab.Split(1.0/3, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("validation lines:", val.Lines, "labels:", val.Labels)

	std := FitStandardizer(train)
	std.Apply(train.X)
	std.Apply(val.X)
	ds, err := train.Dataset()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("training samples:", ds.Len(), "of shape", ds.SampleShape(), "in", ds.Classes, "classes")

	x, err := tab.Row([]string{"5.0", "3.4", "1.5", "0.2"}) // no species
	if err != nil {
		log.Fatal(err)
	}
	std.Apply(x)
	fmt.Printf("standardized: %.2f\n", x)

	_, err = tab.Row([]string{"5.0", "3.4", "?", "0.2"})
	fmt.Println("error:", err)
	// Output:
	// features: [sepal_length sepal_width petal_length petal_width]
	// classes: [setosa versicolor virginica]
	// rows: 9 labels: [0 0 0 1 1 1 2 2 2]
	// validation lines: [5 7 10] labels: [0 1 2]
	// training samples: 6 of shape [4] in 3 classes
	// standardized: [-1.35 1.22 -1.32 -1.28]
	// error: field 3 (column "petal_length"): missing value, expected a number
}

// FuzzReadTable checks that no input makes ReadTable panic, and that a table
// it returns keeps its invariants.
func FuzzReadTable(f *testing.F) {
	f.Add("a,b,c\n1,2,x\n3,4,y\n", "c", false, true, 0)
	f.Add("150,4,a,b\n1,2,0\n3,4,1.0\n\n5,6,2\n", "-1", false, false, 1)
	f.Add("\"A\",\"B\"\n1,2\n3,\"4\n5\"\n", "B", true, true, 0)
	f.Fuzz(func(t *testing.T, content, label string, regression, header bool, skip int) {
		fuzzbound.Run(t, fuzzbound.PerInput, func() {
			cfg := TableConfig{Label: label, Header: header, Regression: regression, SkipRows: skip % 4}
			tab, err := readTable("f.csv", strings.NewReader(content), cfg)
			if err != nil {
				return
			}
			nf := len(tab.Features)
			if nf == 0 || len(tab.X) != tab.Rows()*nf || len(tab.FeatureColumns) != nf {
				t.Fatalf("%d rows, %d features, len(X) = %d", tab.Rows(), nf, len(tab.X))
			}
			if _, err := tab.Dataset(); err != nil {
				t.Fatal(err)
			}
			if tab.Rows() >= 2 {
				if train, val, err := tab.Split(0.5, 1); err == nil && train.Rows()+val.Rows() != tab.Rows() {
					t.Fatalf("split %d rows into %d and %d", tab.Rows(), train.Rows(), val.Rows())
				}
			}
			FitStandardizer(tab).Apply(tab.X)
		})
	})
}

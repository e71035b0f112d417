package traces_test

import (
	"slices"
	"strings"
	"testing"

	"streamscale/traces"
)

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []float64
	}{
		{"taxi layout", "index,window_start,count\n0,2015-01-01 00:00:00,3147\n1,2015-01-01 00:05:00,3370\n", []float64{3147, 3370}},
		{"intel layout", "window_start,count,active_motes\n2004-03-04 00:00:00,322,52\n", []float64{322}},
		{"only column", "count\n1\n2.5\n0\n", []float64{1, 2.5, 0}},
		{"crlf and blank lines", "count\r\n1\r\n\r\n2\r\n", []float64{1, 2}},
		{"spaces and bom", "\ufeffa, count \n x , 7 \n", []float64{7}},
		{"quoted", "\"count\",note\n\"12\",\"a,b\"\n", []float64{12}},
		{"exponent", "count\n1e3\n", []float64{1000}},
		{"no final newline", "count\n4", []float64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := traces.ReadCSV(strings.NewReader(tt.in), "good.csv")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ReadCSV = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadCSVNegativeZero(t *testing.T) {
	got, err := traces.ReadCSV(strings.NewReader("count\n-0\n"), "z.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 0 || 1/got[0] < 0 {
		t.Errorf("ReadCSV(-0) = %v, want [+0]", got)
	}
}

func TestReadCSVBad(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings of the error, besides the file name
	}{
		{"empty file", "", []string{"line 1", "empty"}},
		{"missing count column", "index,value\n0,1\n", []string{"line 1", `no "count" column`}},
		{"count column twice", "count,count\n1,2\n", []string{"line 1", "twice"}},
		{"header only", "index,count\n", []string{"no data rows"}},
		{"nan", "count\n1\nNaN\n", []string{"line 3", "not finite"}},
		{"inf", "count\n1\n2\n-Inf\n", []string{"line 4", "not finite"}},
		{"overflow", "count\n1e400\n", []string{"line 2", "not a number", "out of range"}},
		{"negative", "a,count\nx,1\nx,2\nx,-3\n", []string{"line 4", "negative"}},
		{"unparsable", "count\n12abc\n", []string{"line 2", `"12abc"`, "not a number", "invalid syntax"}},
		{"empty value", "a,count\nx,\n", []string{"line 2", "not a number"}},
		{"ragged short", "a,count\n1,2\n3\n", []string{"line 3", "wrong number of fields"}},
		{"ragged long", "a,count\n1,2,3\n", []string{"line 2", "wrong number of fields"}},
		{"bare quote", "count\n1\"2\n", []string{"line 2", "bare"}},
		{"multi-line field before bad count", "note,count\n\"a\nb\",x\n", []string{"line 3", `"x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := traces.ReadCSV(strings.NewReader(tt.in), "bad.csv")
			if err == nil {
				t.Fatalf("ReadCSV = %v, want an error", got)
			}
			checkErr(t, err, append([]string{"traces: bad.csv: "}, tt.want...)...)
		})
	}
}

package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// countColumn is the name of the value column in CSV and Parquet files.
const countColumn = "count"

// ReadCSV parses the "count" column of a CSV trace. The first row is a header
// naming the columns; every later row is one window. Values must be finite
// and ≥ 0 and there must be at least one data row. name is used only in error
// messages, which give it with the line number (the header is line 1).
func ReadCSV(r io.Reader, name string) ([]float64, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("traces: %s: line 1: empty file, want a header row with a %q column", name, countColumn)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	col := -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h != countColumn {
			continue
		}
		if col >= 0 {
			return nil, fmt.Errorf("traces: %s: line 1: %q column appears twice", name, countColumn)
		}
		col = i
	}
	if col < 0 {
		return nil, fmt.Errorf("traces: %s: line 1: no %q column in header %q", name, countColumn, strings.Join(header, ","))
	}

	var counts []float64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(col)
		v, err := parseCount(rec[col])
		if err != nil {
			return nil, fmt.Errorf("traces: %s: line %d: %w", name, line, err)
		}
		counts = append(counts, v)
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("traces: %s: no data rows after the header", name)
	}
	return counts, nil
}

// csvError reports a csv.Reader error with its line.
func csvError(name string, err error) error {
	if pe, ok := errors.AsType[*csv.ParseError](err); ok {
		return fmt.Errorf("traces: %s: line %d: %w", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("traces: %s: %w", name, err)
}

// parseCount parses one count: a finite number ≥ 0.
func parseCount(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		if ne, ok := errors.AsType[*strconv.NumError](err); ok {
			err = ne.Err // the message already quotes s
		}
		return 0, fmt.Errorf("count %q is not a number: %w", s, err)
	}
	return checkCount(v)
}

// checkCount rejects counts that are not finite or are negative, and turns
// -0 into 0.
func checkCount(v float64) (float64, error) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("count %v is not finite", v)
	case v < 0:
		return 0, fmt.Errorf("count %v is negative", v)
	case v == 0:
		return 0, nil
	}
	return v, nil
}

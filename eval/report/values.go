package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValuesRecord is a committed record of a paper's reported values beside
// paths into our run's JSON output, for a reproduction table: each row
// names the experiment, the value of ours (a dotted path into the summary,
// e.g. "state_locality.wc.ratio") with its format, and the paper's value as
// the paper states it.
type ValuesRecord struct {
	Paper   string      `json:"paper"`   // citation
	Summary string      `json:"summary"` // our run's JSON, path from the repository's root
	Command string      `json:"command"` // the command that wrote it
	Rows    []ValuesRow `json:"rows"`
}

// ValuesRow is one row of a reproduction table.
type ValuesRow struct {
	Experiment string `json:"experiment"`
	Ours       string `json:"ours"`   // dotted path into the summary
	Format     string `json:"format"` // "x2" (2 decimals and ×), "f2", "f0", "pct1"
	Paper      string `json:"paper"`  // as the paper states it
}

// valuesTable renders a ValuesRecord: experiment | ours | paper.
func valuesTable(from []byte, load func(string) ([]byte, error)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(from))
	dec.DisallowUnknownFields()
	var r ValuesRecord
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding a values record: %w", err)
	}
	if r.Summary == "" || len(r.Rows) == 0 {
		return nil, fmt.Errorf("a values record needs summary and rows")
	}
	sb, err := load(r.Summary)
	if err != nil {
		return nil, err
	}
	var sum any
	if err := json.Unmarshal(sb, &sum); err != nil {
		return nil, fmt.Errorf("%s: %w", r.Summary, err)
	}
	var b bytes.Buffer
	b.WriteString("| experiment | streamscale | paper |\n|---|---|---|\n")
	for _, row := range r.Rows {
		v, err := lookup(sum, row.Ours)
		if err != nil {
			return nil, fmt.Errorf("%s: row %q: %w", r.Summary, row.Experiment, err)
		}
		s, err := formatValue(v, row.Format)
		if err != nil {
			return nil, fmt.Errorf("row %q: %w", row.Experiment, err)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.Experiment, s, row.Paper)
	}
	return b.Bytes(), nil
}

// lookup follows a dotted path of object keys through decoded JSON to a
// number.
func lookup(v any, path string) (float64, error) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("path %s: %q is not under an object", path, k)
		}
		if v, ok = m[k]; !ok {
			return 0, fmt.Errorf("path %s: no key %q", path, k)
		}
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("path %s is not a number", path)
	}
	return f, nil
}

func formatValue(x float64, format string) (string, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–", nil
	}
	switch format {
	case "x2":
		return strconv.FormatFloat(x, 'f', 2, 64) + "×", nil
	case "f2":
		return strconv.FormatFloat(x, 'f', 2, 64), nil
	case "f3":
		return strconv.FormatFloat(x, 'f', 3, 64), nil
	case "f0":
		return strconv.FormatFloat(x, 'f', 0, 64), nil
	case "pct1":
		return strconv.FormatFloat(100*x, 'f', 1, 64) + "%", nil
	}
	return "", fmt.Errorf("unknown format %q (x2, f2, f3, f0, pct1)", format)
}

package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"streamscale/eval/paired"
)

// A table renders the committed file a marker names; load reads other
// committed files by their path from the repository's root.
type table func(from []byte, load func(string) ([]byte, error)) ([]byte, error)

// Tables are the names of the tables a document can ask for between
// markers, each rendered from a committed summary (see Render).
var Tables = map[string]table{
	"paired-headline":    pairedTable(HeadlineTable),
	"paired-controllers": pairedTable(ControllersTable),
	"paired-note": pairedTable(func(s paired.Summary) []byte {
		return []byte(headlineNote(s))
	}),
	"paired-comparisons":    pairedTable(ComparisonsTable),
	"paired-seeds":          pairedTable(SeedsTable),
	"paired-seeds-verdicts": pairedTable(SeedVerdictsTable),
	"reproduction":          reproductionTable,
	"values":                valuesTable,
	"live-runs":             liveTable,
}

func decodePaired(b []byte) (paired.Summary, error) {
	var s paired.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("decoding a paired summary: %w", err)
	}
	if len(s.Combinations) == 0 {
		return s, fmt.Errorf("a paired summary without cells")
	}
	return s, nil
}

func pairedTable(f func(paired.Summary) []byte) table {
	return func(b []byte, _ func(string) ([]byte, error)) ([]byte, error) {
		s, err := decodePaired(b)
		if err != nil {
			return nil, err
		}
		return f(s), nil
	}
}

// marker matches an opening marker, `<!-- table NAME FROM -->` on a line
// of its own; the table ends at the next `<!-- end table -->` line.
var marker = regexp.MustCompile(`(?m)^<!-- table ([a-z0-9-]+) (\S+) -->\n`)

const endMarker = "<!-- end table -->\n"

// Render returns doc with the text between every pair of table markers
// replaced by the named table rendered from the summary at FROM, which
// load reads (FROM is a path relative to the repository's root). Text
// outside the markers is kept byte for byte. An unknown table, a marker
// without its end, or a summary that cannot be read is an error naming
// the marker's line.
func Render(doc []byte, load func(path string) ([]byte, error)) ([]byte, error) {
	var out bytes.Buffer
	rest := doc
	line := 1
	for {
		loc := marker.FindSubmatchIndex(rest)
		if loc == nil {
			out.Write(rest)
			return out.Bytes(), nil
		}
		name, from := string(rest[loc[2]:loc[3]]), string(rest[loc[4]:loc[5]])
		at := line + bytes.Count(rest[:loc[0]], []byte("\n"))
		out.Write(rest[:loc[1]])
		body := rest[loc[1]:]
		end := bytes.Index(body, []byte(endMarker))
		if end < 0 || (end > 0 && body[end-1] != '\n') {
			return nil, fmt.Errorf("eval: line %d: table %s has no %q line after it", at, name, strings.TrimSpace(endMarker))
		}
		f, ok := Tables[name]
		if !ok {
			return nil, fmt.Errorf("eval: line %d: unknown table %q (known: %s)", at, name, strings.Join(tableNames(), ", "))
		}
		summary, err := load(from)
		if err != nil {
			return nil, fmt.Errorf("eval: line %d: table %s: %w", at, name, err)
		}
		table, err := f(summary, load)
		if err != nil {
			return nil, fmt.Errorf("eval: line %d: table %s from %s: %w", at, name, from, err)
		}
		out.Write(table)
		out.WriteString(endMarker)
		consumed := loc[1] + end + len(endMarker)
		line += bytes.Count(rest[:consumed], []byte("\n"))
		rest = rest[consumed:]
	}
}

func tableNames() []string {
	var names []string
	for n := range Tables {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

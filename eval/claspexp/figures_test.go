package claspexp

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFigures(t *testing.T) {
	r := &Report{
		Scaling:    []ScalingRow{{App: "syn", Workers: []int{1, 5, 10}, MaxRate: []float64{200, 750, 1300}}},
		Placements: []PlacementRow{{App: "syn", Workers: 10, MaxRate: map[string]float64{"clasp": 1300, "faasflow": 1200, "zhang24": 600}}},
		ModeRuns: []ModeRow{
			{App: "wc", Mode: "burst", Method: "clasp", Workers: []int{1, 2, 3}, StepP95MS: []float64{5, 50, 0}},
			{App: "wc", Mode: "burst", Method: "hpa", Workers: []int{1, 1, 1}, StepP95MS: []float64{5, 500, 5000}},
		},
	}
	var first [][]byte
	for k := range 2 {
		dir := t.TempDir()
		names, err := Figures(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{FigScaling, FigPlacement, FigModes}; !reflect.DeepEqual(names, want) {
			t.Fatalf("figures %v, want %v", names, want)
		}
		for i, n := range names {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("%s is not a PNG", n)
			}
			if k == 0 {
				first = append(first, b)
			} else if !bytes.Equal(b, first[i]) {
				t.Errorf("%s differs between two renderings", n)
			}
		}
	}
	if names, err := Figures(t.TempDir(), &Report{}); err != nil || len(names) != 0 {
		t.Errorf("empty report: %v, %v", names, err)
	}
}

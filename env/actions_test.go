package env

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestActionDeltas checks the action-set option: the zero value is the
// paper's set, another set is applied by Step and reported by Spaces, and
// the zero value leaves the encoded Config as before the option existed.
func TestActionDeltas(t *testing.T) {
	w := rates{1000, 1000, 1000, 1000}
	cfg, err := EdgeConfig("pred", 1, w)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Deltas(); got != DeltaMillicores {
		t.Fatalf("zero ActionDeltas: %v, want the paper's %v", got, DeltaMillicores)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "ActionDeltas") {
		t.Errorf("the zero action set is encoded (config hashes would change): %s", b)
	}
	set := [5]float64{-200, -50, 0, 50, 500}
	cfg.ActionDeltas = set
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Spaces().DeltaMillicores; !slices.Equal(got, set[:]) {
		t.Errorf("spaces report %v, want %v", got, set)
	}
	e.Reset(0)
	n := len(cfg.App.Tasks)
	up := make([]int, n)
	for k := range up {
		up[k] = 4 // +500
	}
	if _, err := e.Step(Action{Choices: up}); err != nil {
		t.Fatal(err)
	}
	down := make([]int, n)
	for k := range down {
		down[k] = 0 // −200 here, −500 in the paper's set
	}
	sr, err := e.Step(Action{Choices: down})
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range sr.Info.Requested {
		if r != 800 { // 500 → 1,000 → 800
			t.Fatalf("task %d: requested %v after +500 then the first choice, want 800 (set %v)", k, r, set)
		}
	}
}

func TestActionDeltasRefused(t *testing.T) {
	for _, tc := range []struct {
		set  [5]float64
		want string
	}{
		{[5]float64{-500, -50, 10, 50, 500}, "the middle choice is 10"},
		{[5]float64{-500, 50, 0, 50, 500}, "not strictly increasing"},
		{[5]float64{-500, -50, 0, 50, 20000}, "at most 9500"},
	} {
		cfg, err := EdgeConfig("pred", 1, rates{1000})
		if err != nil {
			t.Fatal(err)
		}
		cfg.ActionDeltas = tc.set
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.set, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"-200,-50,0,50", "4 values, want 5"},
		{"-200,-50,0,50,x", "value 4"},
		{"-200,-50,0,50,NaN", "want finite"},
		{"-200,-50,0,50,500", ""},
	} {
		d, err := ParseActionDeltas(tc.in, 500, 10000)
		switch {
		case tc.want == "" && (err != nil || d != [5]float64{-200, -50, 0, 50, 500}):
			t.Errorf("%q: %v, %v", tc.in, d, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

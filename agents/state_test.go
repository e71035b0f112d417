package agents

import (
	"bytes"
	"testing"
)

// FuzzRuleState: no input panics a rule's UnmarshalBinary, a refused one
// leaves the rule as it was, and an accepted one marshals back to itself.
func FuzzRuleState(f *testing.F) {
	cfg := DefaultThresholdConfig()
	cfg.ScaleDownWindow, cfg.MetricLagSteps = 3, 1
	f.Fuzz(func(t *testing.T, b []byte) {
		th, err := NewThreshold(cfg)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := th.MarshalBinary()
		if err := th.UnmarshalBinary(b); err != nil {
			if after, _ := th.MarshalBinary(); !bytes.Equal(after, before) {
				t.Fatalf("a refused state changed the rule")
			}
			return
		}
		again, _ := th.MarshalBinary()
		if s, err := unmarshalRing(again, cfg.ScaleDownWindow, cfg.MetricLagSteps+1); err != nil || s.n != th.n {
			t.Fatalf("an accepted state does not round-trip: %v", err)
		}
	})
}

func TestRuleStateRefusals(t *testing.T) {
	th, _ := NewThreshold(DefaultThresholdConfig())
	good := ringState{n: 1, hist: make([]float64, 30), shown: make([]float64, 1)}.marshal()
	if err := th.UnmarshalBinary(good); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("RINX"), good[4:]...),
		"truncated": good[:len(good)-3],
		"trailing":  append(append([]byte(nil), good...), 0),
		"ring size": ringState{n: 2, hist: make([]float64, 30), shown: make([]float64, 2)}.marshal(),
		"head":      ringState{n: 1, head: 30, hist: make([]float64, 30), shown: make([]float64, 1)}.marshal(),
	} {
		if err := th.UnmarshalBinary(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

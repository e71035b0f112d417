package clasp

import (
	"slices"
	"testing"
)

func TestTrigger(t *testing.T) {
	type obs struct{ t, in, thr float64 }
	tests := []struct {
		name  string
		trace []obs // λ_ref = 1000 at t = 0
		fires []float64
	}{
		{"steady", []obs{{1, 1000, 1000}, {2, 1040, 1040}, {3, 960, 960}, {4, 1000, 1000}, {5, 1000, 1000}}, nil},
		{"rise held 2 s", []obs{{1, 1000, 1000}, {2, 1200, 1200}, {3, 1200, 1200}, {4, 1200, 1200}}, []float64{3}},
		{"rise for 1 s only", []obs{{1, 1200, 1200}, {2, 1000, 1000}, {3, 1200, 1200}, {4, 1000, 1000}}, nil},
		{"fall held 2 s", []obs{{1, 800, 800}, {2, 800, 800}}, []float64{2}},
		{"direction flips: not consistent", []obs{{1, 1200, 1200}, {2, 800, 800}, {3, 1200, 1200}, {4, 800, 800}}, nil},
		{"just inside the 10% band", []obs{{1, 1099, 1099}, {2, 1099, 1099}, {3, 1099, 1099}}, nil},
		{"lag held 3 s", []obs{{1, 1000, 900}, {2, 1000, 900}, {3, 1000, 900}, {4, 1000, 900}}, []float64{3}},
		{"lag for 2 s only", []obs{{1, 1000, 900}, {2, 1000, 900}, {3, 1000, 1000}, {4, 1000, 900}, {5, 1000, 900}}, nil},
		{"lag within tolerance", []obs{{1, 1000, 960}, {2, 1000, 960}, {3, 1000, 960}, {4, 1000, 960}}, nil},
		{"irregular sampling counts time", []obs{{0.5, 1000, 1000}, {2.5, 1300, 1300}}, []float64{2.5}},
		{"repeated time ignored", []obs{{1, 1300, 1300}, {1, 1300, 1300}, {1, 1300, 1300}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTrigger(DefaultTriggerConfig())
			if err != nil {
				t.Fatal(err)
			}
			tr.Observe(0, 1000, 1000)
			tr.Rebase(0, 1000, 0)
			var fired []float64
			for _, o := range tt.trace {
				if f, why := tr.Observe(o.t, o.in, o.thr); f {
					if why == "" {
						t.Error("fired without a reason")
					}
					fired = append(fired, o.t)
					tr.Rebase(o.t, o.in, o.t)
				}
			}
			if !slices.Equal(fired, tt.fires) {
				t.Errorf("fired at %v, want %v", fired, tt.fires)
			}
		})
	}
}

func TestTriggerCooldownAndRebase(t *testing.T) {
	tr, _ := NewTrigger(DefaultTriggerConfig())
	tr.Observe(0, 1000, 1000)
	tr.Rebase(0, 1000, 5) // migration until t = 5
	for s := 1.0; s < 5; s++ {
		if f, _ := tr.Observe(s, 2000, 500); f {
			t.Fatalf("fired at %v during the cooldown", s)
		}
	}
	if f, _ := tr.Observe(5, 2000, 2000); f {
		t.Fatal("fired on the first observation after the cooldown")
	}
	if f, _ := tr.Observe(6, 2000, 2000); !f {
		t.Fatal("did not fire 2 s after the cooldown, input doubled")
	}
	tr.Rebase(6, 2000, 6)
	for s := 7.0; s < 12; s++ {
		if f, _ := tr.Observe(s, 2000, 2000); f {
			t.Fatalf("fired at %v after rebasing to the new rate", s)
		}
	}
	if _, err := NewTrigger(TriggerConfig{RateChange: 0, RateHoldS: 2, LagHoldS: 3}); err == nil {
		t.Error("zero rate change accepted")
	}
}

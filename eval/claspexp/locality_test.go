package claspexp

import (
	"testing"

	"streamscale/clasp"
)

func TestRemoteState(t *testing.T) {
	app := clasp.PL()
	rem := RemoteState(app)
	for i, o := range app.Operators {
		want := o.ExecUS
		if o.Stateful {
			want += RemoteStateUS - LocalStateUS
		}
		if rem.Operators[i].ExecUS != want {
			t.Errorf("%s: ExecUS %v, want %v", o.Name, rem.Operators[i].ExecUS, want)
		}
	}
	if app.Operators[0].ExecUS == rem.Operators[0].ExecUS && app.Operators[0].Stateful {
		t.Error("RemoteState changed its argument's operators")
	}
}

// TestStateLocalities checks that remote state lowers the sustained rate
// of a stateful app and that stateless apps are skipped.
func TestStateLocalities(t *testing.T) {
	pr := Probe{Steps: 8, MinRatio: 0.97, MaxBacklogS: 0.25, Iters: 4}
	got, err := StateLocalities([]clasp.App{clasp.PL(), clasp.SYN()}, 3, pr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["syn"]; ok {
		t.Error("SYN has no state, want it skipped")
	}
	pl, ok := got["pl"]
	if !ok || !(pl.Local > pl.Remote) || !(pl.Remote > 0) || pl.Ratio != pl.Local/pl.Remote {
		t.Errorf("pl: %+v, want local > remote > 0 and ratio local/remote", pl)
	}
}

// TestSustainsIgnoresInFlight checks that a long batched pipeline's
// in-flight events (a steady backlog level) do not count against a rate
// it carries, while a rate above capacity (a growing backlog) fails.
func TestSustainsIgnoresInFlight(t *testing.T) {
	app := clasp.ETL()
	pr := Probe{Steps: 20, MinRatio: 0.97, MaxBacklogS: 0.25, Iters: 4}
	ok, err := Sustains(app, 5, PaperPlacer(5), 100, pr)
	if err != nil || !ok {
		t.Errorf("ETL at 100 ev/s on 5 workers: sustained %v (%v), want true", ok, err)
	}
	ok, err = Sustains(app, 1, PaperPlacer(1), 400, pr)
	if err != nil || ok {
		t.Errorf("ETL at 400 ev/s on 1 worker: sustained %v (%v), want false", ok, err)
	}
}

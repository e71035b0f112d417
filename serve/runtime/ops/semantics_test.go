package ops

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestPREDRegressionAgainstBatch holds LinearRegression's online
// prediction for each trip against a batch least-squares fit of the
// taxi's earlier trips, and BlockWindowAverage's output against the mean
// of the taxi's last ten fares.
func TestPREDRegressionAgainstBatch(t *testing.T) {
	a := PRED()
	r := newRun(a)
	r.trace = true
	const n = 2000
	r.feed(t, 3, n)
	type trip struct{ x, y float64 }
	hist := map[uint64][]trip{}
	var lr, avg []result
	for _, e := range r.outputs[2] {
		var x result
		if err := x.decode(e.p); err != nil {
			t.Fatal(err)
		}
		lr = append(lr, x)
	}
	for _, e := range r.outputs[3] {
		var x result
		if err := x.decode(e.p); err != nil {
			t.Fatal(err)
		}
		avg = append(avg, x)
	}
	src := a.NewSource(3)
	li, ai := 0, 0
	for range n {
		key, p := src.Next(nil)
		var f taxiFields
		if err := parseTaxiSenML(p, &f); err != nil {
			t.Fatal(err)
		}
		x, y := f.num[fDistance], f.num[fFare]
		h := hist[key]
		want := 2.5 + 2.5*x
		if len(h) >= 2 {
			var mx, my float64
			for _, p := range h {
				mx += p.x
				my += p.y
			}
			mx /= float64(len(h))
			my /= float64(len(h))
			var sxy, sxx float64
			for _, p := range h {
				sxy += (p.x - mx) * (p.y - my)
				sxx += (p.x - mx) * (p.x - mx)
			}
			b := sxy / sxx
			want = my + b*(x-mx)
		}
		if got := lr[li]; got.key != key || math.Abs(got.a-want) > 1e-6*max(1, math.Abs(want)) || got.b != y {
			t.Fatalf("trip %d: predicted %v (actual %v), batch fit %v", li, got.a, got.b, want)
		}
		li++
		h = append(h, trip{x, y})
		hist[key] = h
		if len(h)%BlockWindow == 0 {
			m := 0.0
			for _, p := range h[len(h)-BlockWindow:] {
				m += p.y
			}
			m /= BlockWindow
			if got := avg[ai]; got.key != key || math.Abs(got.a-m) > 1e-9 {
				t.Fatalf("block %d: mean %v, want %v", ai, got.a, m)
			}
			ai++
		}
	}
	if ai != len(avg) || ai == 0 {
		t.Fatalf("%d block means, oracle %d", len(avg), ai)
	}
}

// TestAACampaignCounts holds the campaign counts against an oracle that
// decodes the generated JSON with encoding/json.
func TestAACampaignCounts(t *testing.T) {
	a := AA()
	r := newRun(a)
	const n = 3000
	r.feed(t, 8, n)
	adCamp := map[string]uint64{}
	var id [36]byte
	for ad := range Ads {
		adCamp[string(adUUID(id[:0], ad))] = uint64(Campaign(ad))
	}
	type cw struct{ camp, w uint64 }
	want := map[cw]uint64{}
	src := a.NewSource(8)
	for range n {
		_, p := src.Next(nil)
		var ev map[string]string
		if err := json.Unmarshal(p, &ev); err != nil {
			t.Fatal(err)
		}
		if ev["event_type"] != "view" {
			continue
		}
		tm, _ := strconv.ParseUint(ev["event_time"], 10, 64)
		want[cw{adCamp[ev["ad_id"]], tm / WindowMS}]++
	}
	for camp := range uint64(Campaigns) {
		st, ok := r.states[4][mix(camp)]
		if !ok {
			continue
		}
		rd := reader{b: st}
		w, c, pw, pc := rd.uvarint(), rd.uvarint(), rd.uvarint(), rd.uvarint()
		if c != want[cw{camp, w}] || (pw != w && pc != want[cw{camp, pw}]) {
			t.Fatalf("campaign %d: window %d count %d (previous %d: %d), oracle %d and %d",
				camp, w, c, pw, pc, want[cw{camp, w}], want[cw{camp, pw}])
		}
	}
}

// TestPLAggregate holds the per-category totals against an oracle over
// the generated CSV.
func TestPLAggregate(t *testing.T) {
	a := PL()
	r := newRun(a)
	const n = 3000
	r.feed(t, 12, n)
	type tot struct{ n, cents uint64 }
	want := map[uint64]tot{}
	src := a.NewSource(12)
	for range n {
		_, p := src.Next(nil)
		c := strings.Split(string(p), ",")
		item, _ := strconv.ParseUint(c[2], 10, 64)
		amt, _ := strconv.ParseFloat(c[3], 64)
		cents := uint64(math.Round(amt * 100))
		if cat := Category(item); cents > 5000 && cat%3 == 0 {
			w := want[cat]
			want[cat] = tot{w.n + 1, w.cents + cents}
		}
	}
	if len(want) != len(r.states[4]) {
		t.Fatalf("%d categories aggregated, oracle %d", len(r.states[4]), len(want))
	}
	for cat, w := range want {
		rd := reader{b: r.states[4][mix(cat)]}
		if got := (tot{rd.uvarint(), rd.uvarint()}); got != w {
			t.Fatalf("category %d: %+v, oracle %+v", cat, got, w)
		}
	}
}

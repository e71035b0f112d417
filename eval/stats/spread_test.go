package stats

import (
	"math"
	"reflect"
	"testing"
)

// TestSampleSD: the sample SD and the standard error against figures
// computed by hand.
func TestSampleSD(t *testing.T) {
	for _, c := range []struct {
		x      []float64
		sd, se float64
	}{
		{nil, 0, 0},
		{[]float64{3}, 0, 0},
		{[]float64{2, 4}, math.Sqrt2, 1}, // mean 3, ss 2, s² 2
		{[]float64{2, -5, 6}, math.Sqrt(31), math.Sqrt(31.0 / 3)}, // mean 1, ss 1+36+25
		{[]float64{7, 7, 7, 7}, 0, 0},
	} {
		if got := SampleSD(c.x); math.Abs(got-c.sd) > 1e-12 {
			t.Errorf("SampleSD(%v) = %v, want %v", c.x, got, c.sd)
		}
		if got := StdErr(c.x); math.Abs(got-c.se) > 1e-12 {
			t.Errorf("StdErr(%v) = %v, want %v", c.x, got, c.se)
		}
	}
}

// TestRanking: group means in first-appearance order, the order by keys
// with ties by name, and the discordant pairs, ties never discordant.
func TestRanking(t *testing.T) {
	r := func(name string, keys ...float64) Ranked { return Ranked{Name: name, Keys: keys} }
	means := GroupMeans([]Ranked{r("b", 0.2, 10), r("a", 0.1, 30), r("b", 0.4, 20), r("c", 0.1, 30)})
	want := []Ranked{r("b", 0.3, 15), r("a", 0.1, 30), r("c", 0.1, 30)}
	if len(means) != len(want) {
		t.Fatalf("GroupMeans: %v, want %v", means, want)
	}
	for i := range want {
		if means[i].Name != want[i].Name || math.Abs(means[i].Keys[0]-want[i].Keys[0]) > 1e-12 || means[i].Keys[1] != want[i].Keys[1] {
			t.Errorf("GroupMeans[%d] = %v, want %v", i, means[i], want[i])
		}
	}
	if got := Order(means); !reflect.DeepEqual(got, []string{"a", "c", "b"}) {
		t.Errorf("Order = %v, want [a c b] (a, c tie: by name)", got)
	}
	// Second key breaks a tie on the first.
	if got := Order([]Ranked{r("x", 1, 5), r("y", 1, 4)}); !reflect.DeepEqual(got, []string{"y", "x"}) {
		t.Errorf("Order = %v, want [y x]", got)
	}
	a := []Ranked{r("p", 0.9, 3), r("q", 0.9, 3), r("s", 0, 4), r("u", 0, 3.9)}
	b := []Ranked{r("p", 0.93, 3), r("q", 0.89, 3), r("s", 0, 3.8), r("u", 0, 3.95)}
	if got := Discordant(a, b); !reflect.DeepEqual(got, [][2]string{{"s", "u"}}) {
		t.Errorf("Discordant = %v, want [[s u]] (p, q tie in a)", got)
	}
	if got := Discordant(a, a); got != nil {
		t.Errorf("Discordant(a, a) = %v, want none", got)
	}
	if got := Discordant(a, b[:1]); got != nil {
		t.Errorf("Discordant with names missing = %v, want none", got)
	}
}

package live

import (
	"slices"
	"strings"
	"testing"
)

func TestParseLevels(t *testing.T) {
	got, err := ParseLevels("100×2, 40x3")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{100, 100, 40, 40, 40}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "100", "100×0", "-1×2", "NaN×2", "1e9×2", "100×2,", "100×x", "1×100001", "1×99999,1×2"} {
		if _, err := ParseLevels(bad); err == nil || !strings.HasPrefix(err.Error(), "live: ") {
			t.Errorf("ParseLevels(%q) = %v, want a live: error", bad, err)
		}
	}
}

func FuzzParseLevels(f *testing.F) {
	for _, s := range []string{"100×2,40x3", "", "0x1", "1e7×1", "x", "×", "1×99999,1×2", " 5 x 2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := ParseLevels(s)
		if err != nil {
			if out != nil {
				t.Fatalf("error %v with output", err)
			}
			return
		}
		if len(out) < 1 || len(out) > MaxLevelPoints {
			t.Fatalf("%d points", len(out))
		}
		for _, r := range out {
			if !(r >= 0 && r <= 1e7) {
				t.Fatalf("rate %v", r)
			}
		}
	})
}

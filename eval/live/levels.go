package live

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxLevelPoints bounds the points a levels trace may hold.
const MaxLevelPoints = 100_000

// ParseLevels parses a step trace "R×N[,R×N…]" (also "RxN"): rate R
// inputs/s held for N trace points, in order; it returns one rate per
// point. Rates are finite and in [0, 1e7], counts ≥ 1, and the trace holds
// at most MaxLevelPoints points; anything else is an error naming the
// entry.
func ParseLevels(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("live: empty levels, want R×N[,R×N…]")
	}
	var out []float64
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		r, n, ok := strings.Cut(part, "×")
		if !ok {
			r, n, ok = strings.Cut(part, "x")
		}
		if !ok {
			return nil, fmt.Errorf("live: level %d %q, want RATE×POINTS", i, part)
		}
		rate, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil || math.IsNaN(rate) || rate < 0 || rate > 1e7 {
			return nil, fmt.Errorf("live: level %d %q: rate %q, want 0..1e7 inputs/s", i, part, r)
		}
		k, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || k < 1 || k > MaxLevelPoints-len(out) {
			return nil, fmt.Errorf("live: level %d %q: points %q, want ≥ 1 and at most %d in all", i, part, n, MaxLevelPoints)
		}
		for range k {
			out = append(out, rate)
		}
	}
	return out, nil
}

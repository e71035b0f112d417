package traces

import (
	"math"
	"streamscale/rng"
)

// windowsPerDay is the period of the diurnal cycle: one day of 5-minute
// windows.
const windowsPerDay = 288

// synthParams shapes a synthetic trace. All shape terms are relative to the
// mean; the result is then mapped onto [min, max] with the target mean.
type synthParams struct {
	mean, min, max float64 // target statistics, counts per window

	// harmonics[k-1] = {a_k, b_k}: the daily cycle is
	// 1 + Σ_k a_k cos(2πki/288) + b_k sin(2πki/288) at window i, where
	// window 0 starts at midnight.
	harmonics [][2]float64

	levelSD   float64 // stationary SD of the slow day-to-day level, an AR(1) with a one-day time constant
	noiseRho  float64 // lag-1 autocorrelation of the fast AR(1) noise
	noiseSD   float64 // stationary SD of the fast noise
	flatNoise bool    // draw the fast noise's innovations from a uniform distribution (light tails), not a normal one

	burstProb  float64 // chance that a burst starts at a window
	burstMin   float64 // smallest burst height
	burstMax   float64 // largest burst height
	burstDecay float64 // factor by which a burst shrinks each window
}

// taxiSynth returns the synthetic shape of the taxi traces with the given
// target mean, min and max (counts per window). The harmonics are the first
// four Fourier coefficients of the mean daily profile of
// taxi_nab_5min_2015-01-01_3600pts.csv, divided by its mean (2,369.1); the
// level SD matches the spread of its daily means (1,760 to 3,100).
func taxiSynth(mean, lo, hi float64) synthParams {
	return synthParams{
		mean: mean, min: lo, max: hi,
		harmonics: [][2]float64{
			{-0.0989, -0.4627},
			{0.0948, -0.1717},
			{0.0264, 0.0382},
			{-0.0229, 0.0696},
		},
		levelSD:    0.12,
		noiseRho:   0.9,
		noiseSD:    0.04,
		burstProb:  1.0 / 600,
		burstMin:   0.15,
		burstMax:   0.4,
		burstDecay: 0.85,
	}
}

// intelSynth is the synthetic shape of the Intel trace, fitted to the 1,056
// replayed windows of intel_5min_counts.csv: mean 321.9, SD 17.3, min 267,
// max 362, daily means that differ by a few percent, a daily cycle of about
// 1% of the mean, and window-to-window noise of about 5% with lag-1
// autocorrelation 0.6. The noise has uniform innovations because the real
// counts have lighter tails than a normal's (5% to 95% spans only 3.3 SD);
// with normal noise the pinned [min, max] would leave the SD near 14.
var intelSynth = synthParams{
	mean: 321.9, min: 267, max: 362,
	harmonics: [][2]float64{
		{-0.0034, -0.0099},
		{-0.0031, 0.0065},
		{0.0075, -0.0003},
	},
	levelSD:   0.04,
	noiseRho:  0.6,
	noiseSD:   0.045,
	flatNoise: true,
}

// synthesize returns n integer counts drawn from the stream
// "traces/synthetic/<name>" of seed.
func synthesize(name string, n int, p synthParams, seed uint64) []float64 {
	r := rng.New(seed, rng.TracesSynthetic+name)
	slowRho := math.Exp(-1.0 / windowsPerDay)
	slowInnov := p.levelSD * math.Sqrt(1-slowRho*slowRho)
	fastInnov := p.noiseSD * math.Sqrt(1-p.noiseRho*p.noiseRho)

	level := p.levelSD * r.NormFloat64()
	noise := p.noiseSD * r.NormFloat64()
	burst := 0.0
	y := make([]float64, n)
	for i := range y {
		phase := 2 * math.Pi * float64(i%windowsPerDay) / windowsPerDay
		shape := 1.0
		for k, h := range p.harmonics {
			kp := float64(k+1) * phase
			shape += h[0]*math.Cos(kp) + h[1]*math.Sin(kp)
		}
		level = slowRho*level + slowInnov*r.NormFloat64()
		var e float64
		if p.flatNoise {
			e = math.Sqrt(3) * (2*r.Float64() - 1)
		} else {
			e = r.NormFloat64()
		}
		noise = p.noiseRho*noise + fastInnov*e
		if r.Float64() < p.burstProb {
			burst += p.burstMin + (p.burstMax-p.burstMin)*r.Float64()
		}
		y[i] = shape*(1+level+noise) + burst
		burst *= p.burstDecay
	}
	return fitStats(y, p.mean, p.min, p.max)
}

// fitStats maps y monotonically onto integer counts with minimum lo, maximum
// hi and mean close to mean: u = (y - min y)/(max y - min y), then
// lo + (hi-lo)·u^γ rounded, with γ found by bisection so that the mean of
// u^γ is (mean-lo)/(hi-lo).
func fitStats(y []float64, mean, lo, hi float64) []float64 {
	ymin, ymax := y[0], y[0]
	for _, v := range y {
		ymin = min(ymin, v)
		ymax = max(ymax, v)
	}
	out := make([]float64, len(y))
	if ymax == ymin {
		for i := range out {
			out[i] = math.Round(mean)
		}
		return out
	}
	u := make([]float64, len(y))
	for i, v := range y {
		u[i] = (v - ymin) / (ymax - ymin)
	}
	meanPow := func(g float64) float64 {
		s := 0.0
		for _, x := range u {
			s += math.Pow(x, g)
		}
		return s / float64(len(u))
	}
	target := (mean - lo) / (hi - lo)
	// meanPow falls as γ rises; search log γ in [-4, 4].
	a, b := -4.0, 4.0
	for range 60 {
		m := (a + b) / 2
		if meanPow(math.Exp(m)) > target {
			a = m
		} else {
			b = m
		}
	}
	g := math.Exp((a + b) / 2)
	for i, x := range u {
		out[i] = math.Round(lo + (hi-lo)*math.Pow(x, g))
	}
	return out
}

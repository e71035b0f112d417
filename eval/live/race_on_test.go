//go:build race

package live

// raceEnabled: the race detector slows the runtime about tenfold, so
// timing claims about the live system do not hold under it.
const raceEnabled = true

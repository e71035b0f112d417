//go:build race

package api

// raceEnabled reports a -race build: sync.Pool then drops items at random,
// so allocation counts are not meaningful.
const raceEnabled = true

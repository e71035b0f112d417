// Package layering holds no code: its test checks the import structure
// that the house style prescribes (arrows toward env; gorgonia only in the
// training package, gin only in serve/api; the libraries free of the
// commands), by reading `go list -deps` of every package.
package layering

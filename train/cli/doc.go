// Package cli is the train command's entry point: Main parses the flags
// (internal/command conventions: a bad flag is one line naming it and exit
// status 2, -h prints the usage and every flag), applies a -config recipe
// (run.ReadRecipe) to the flags the command line did not give, through
// the flags themselves so a recipe value is checked as the flag is, reads
// -seeds (ParseSeeds), and hands the options to package run. It does no
// work of its own; determinism and file I/O are run's (see its doc).
package cli

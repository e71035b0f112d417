package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"streamscale/env"
	"streamscale/traces"
)

// Options is what Main needs from its process.
type Options struct {
	Stdout, Stderr io.Writer
	// Terminal reports whether Stderr is a terminal (draw a progress bar).
	Terminal bool
	// Commit and GoVersion are recorded in artifacts; "" means "unknown".
	Commit, GoVersion string
	// Workers bounds the episodes run at once; ≤ 0 means GOMAXPROCS.
	Workers int
}

// usageError marks an error as bad usage (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

const usage = `usage: go run ./eval <command> [flags]

commands:
  run      run one episode of one controller and summarise it
  paired   run the paired evaluation protocol and judge it
  clasp    reproduce the CLASP evaluation in simulation

Run 'go run ./eval <command> -h' for the flags of a command.
`

// Main runs the eval command with args (without the program name) and
// returns the exit code.
func Main(ctx context.Context, args []string, o Options) int {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Commit == "" {
		o.Commit = "unknown"
	}
	if o.GoVersion == "" {
		o.GoVersion = "unknown"
	}
	if len(args) == 0 {
		fmt.Fprint(o.Stderr, "eval: no command\n\n"+usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, args[1:], o)
	case "paired":
		err = pairedCmd(ctx, args[1:], o)
	case "clasp":
		err = claspCmd(ctx, args[1:], o)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(o.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(o.Stderr, "eval: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintln(o.Stderr, err)
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// parseFlags parses args into fs, turning flag errors into usage errors
// and refusing positional arguments.
func parseFlags(fs *flag.FlagSet, args []string, o Options) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(o.Stdout)
			fmt.Fprintf(o.Stdout, "usage: go run ./eval %s [flags]\n\n", fs.Name())
			fs.PrintDefaults()
			return err
		}
		return usagef("eval %s: %v (see 'go run ./eval %s -h')", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("eval %s: unexpected argument %q (flags only)", fs.Name(), fs.Arg(0))
	}
	return nil
}

// explicit reports which flags were set on the command line.
func explicit(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

func checkProfile(p string) error {
	if !slices.Contains(env.Profiles(), p) {
		return usagef("eval: unknown profile %q (want %s)", p, strings.Join(env.Profiles(), " or "))
	}
	return nil
}

func checkTrace(t string) error {
	if slices.Contains(traces.Names(), t) {
		return nil
	}
	if strings.HasSuffix(t, ".csv") || strings.HasSuffix(t, ".parquet") {
		return nil
	}
	return usagef("eval: unknown trace %q (want %s, or a path ending in .csv or .parquet)", t, strings.Join(traces.Names(), ", "))
}

func checkRateMult(k float64) error {
	if !(k > 0) || math.IsInf(k, 0) {
		return usagef("eval: rate multiplier %v, want a finite number > 0", k)
	}
	return nil
}

// loadTrace loads a named trace or a file; failures are usage errors (a
// missing or malformed file). The fallback notice goes to stderr.
func loadTrace(name, dir string, mult float64, seed uint64, o Options) (*traces.Trace, error) {
	t, err := traces.Load(name, traces.Options{Dir: dir, RateMult: mult, Seed: seed, Logf: func(format string, args ...any) {
		fmt.Fprintf(o.Stderr, "eval: "+format+"\n", args...)
	}})
	if err != nil {
		return nil, usageError{fmt.Errorf("eval: trace %q: %w", name, err)}
	}
	return t, nil
}

// traceSource names where a trace came from without host-specific paths.
func traceSource(t *traces.Trace) string {
	if t.Source == "synthetic" || t.Source == "" {
		return t.Source
	}
	return filepath.Base(t.Source)
}

// splitList splits a comma-separated flag value, refusing empty entries
// and duplicates.
func splitList(flagName, v string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, usagef("eval: -%s %q has an empty entry", flagName, v)
		}
		if slices.Contains(out, s) {
			return nil, usagef("eval: -%s lists %q twice", flagName, s)
		}
		out = append(out, s)
	}
	return out, nil
}

// GitCommit returns `git rev-parse HEAD` of the working directory, or
// "unknown".
func GitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

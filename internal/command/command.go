// Package command is the shape every streamscale command shares (go run
// ./train, ./eval, ./serve): Main(ctx, args, IO) int, usage errors that
// exit with status 2 and one line naming the flag, -h on every
// subcommand, and the build information recorded in artifacts.
//
// A command's Main parses its flags with NewFlagSet, returns Usagef errors
// for bad usage, and hands its error to Exit, which prints it and maps it
// to the exit status: 0 for nil or -h, 2 for usage, 1 otherwise.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
)

// IO is what a command needs from its process.
type IO struct {
	Stdout, Stderr io.Writer
	// Stdin is standard input (nil: none); only a command that says so
	// reads it.
	Stdin io.Reader
	// Getenv reads the environment (nil: nothing is set).
	Getenv func(string) string
	// Terminal reports whether Stderr is a terminal (progress bars).
	Terminal bool
}

// Main is the signature of every command's entry point: it runs with args
// (without the program name) and returns the exit status.
type Main func(ctx context.Context, args []string, io IO) int

// Process returns the IO of this process: its stdout, stderr, environment.
func Process() IO {
	return IO{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, Terminal: IsTerminal(os.Stderr)}
}

// Env returns io.Getenv(key), or "" without a Getenv.
func (o IO) Env(key string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(key)
}

// Fill replaces nil writers by io.Discard.
func (o IO) Fill() IO {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return o
}

// ErrUsage is wrapped by every usage error (exit status 2).
var ErrUsage = errors.New("usage")

type usageError struct{ msg string }

func (u usageError) Error() string        { return u.msg }
func (u usageError) Is(target error) bool { return target == ErrUsage }

// Usagef returns a usage error whose message is the formatted text (one
// line, naming the flag or argument that was wrong, prefixed with the
// command, e.g. "eval: -steps -3, want ≥ 0").
func Usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// NewFlagSet returns a flag set for command name (e.g. "eval paired") that
// reports parse errors instead of printing or exiting; Parse prints the
// usage on -h.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses args with fs. On -h it prints the usage (synopsis and every
// flag) to io.Stdout and returns flag.ErrHelp; on a bad flag it returns a
// usage error naming it; positional arguments are refused.
func Parse(fs *flag.FlagSet, synopsis string, args []string, o IO) error {
	o = o.Fill()
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		PrintUsage(o.Stdout, fs, synopsis)
		return flag.ErrHelp
	case err != nil:
		return Usagef("%s: %s (run '%s -h' for the flags)", fs.Name(), firstLine(err.Error()), fs.Name())
	case fs.NArg() > 0:
		return Usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// PrintUsage writes synopsis and the flags of fs to w.
func PrintUsage(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintln(w, strings.TrimRight(synopsis, "\n"))
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// Set reports whether the flag name was given on the command line.
func Set(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// Exit prints err (if any) to io.Stderr and returns the exit status: 0 for
// nil or flag.ErrHelp, 2 for a usage error, 1 otherwise.
func Exit(err error, o IO) int {
	o = o.Fill()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(o.Stderr, err)
		return 2
	}
	fmt.Fprintln(o.Stderr, err)
	return 1
}

// Dispatch runs the subcommand args[0] of program name from subs, printing
// usage on -h or a missing command. Unknown commands are usage errors.
func Dispatch(ctx context.Context, name, usage string, subs map[string]func(context.Context, []string, IO) error, args []string, o IO) int {
	o = o.Fill()
	if len(args) == 0 {
		fmt.Fprintf(o.Stderr, "%s: no command\n%s", name, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(o.Stdout, usage)
		return 0
	}
	run, ok := subs[args[0]]
	if !ok {
		return Exit(Usagef("%s: unknown command %q (run '%s -h')", name, args[0], name), o)
	}
	return Exit(run(ctx, args[1:], o), o)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Build is what every artifact records of the binary that wrote it.
type Build struct {
	Commit    string `json:"commit"`     // VCS revision ("unknown" if none), "+dirty" when modified
	GoVersion string `json:"go_version"` // runtime.Version()
}

// BuildInfo returns the build information of this binary: the VCS
// revision stamped by the go command when present, else `git rev-parse
// HEAD` in the working directory (go run does not stamp), else "unknown".
func BuildInfo() Build {
	b := Build{Commit: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "+dirty"
			}
			b.Commit = rev
			return b
		}
	}
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		if c := strings.TrimSpace(string(out)); c != "" {
			b.Commit = c
		}
	}
	return b
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

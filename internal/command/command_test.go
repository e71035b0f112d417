package command

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParseAndExit(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{args: nil, code: 0},
		{args: []string{"-n", "3"}, code: 0},
		{args: []string{"-h"}, code: 0, out: "usage: x [-n N]"},
		{args: []string{"-bogus"}, code: 2, err: "x: flag provided but not defined: -bogus (run 'x -h' for the flags)"},
		{args: []string{"-n", "z"}, code: 2, err: "x: invalid value"},
		{args: []string{"extra"}, code: 2, err: `x: unexpected argument "extra"`},
	} {
		var out, errb bytes.Buffer
		o := IO{Stdout: &out, Stderr: &errb}
		fs := NewFlagSet("x")
		fs.Int("n", 1, "count")
		code := Exit(Parse(fs, "usage: x [-n N]", tc.args, o), o)
		if code != tc.code {
			t.Errorf("%v: code %d, want %d (stderr %q)", tc.args, code, tc.code, errb.String())
		}
		if !strings.Contains(out.String(), tc.out) || (tc.out == "" && out.Len() > 0) {
			t.Errorf("%v: stdout %q, want %q", tc.args, out.String(), tc.out)
		}
		if !strings.HasPrefix(errb.String(), tc.err) || (tc.err == "" && errb.Len() > 0) {
			t.Errorf("%v: stderr %q, want prefix %q", tc.args, errb.String(), tc.err)
		}
		if tc.code == 2 && strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 {
			t.Errorf("%v: usage error is not one line: %q", tc.args, errb.String())
		}
	}
}

func TestExitCodes(t *testing.T) {
	o := IO{}
	if c := Exit(Usagef("a: -x bad"), o); c != 2 {
		t.Errorf("usage: %d", c)
	}
	if c := Exit(errors.New("boom"), o); c != 1 {
		t.Errorf("error: %d", c)
	}
	if c := Exit(flag.ErrHelp, o); c != 0 {
		t.Errorf("help: %d", c)
	}
	if !errors.Is(Usagef("x"), ErrUsage) || errors.Is(errors.New("x"), ErrUsage) {
		t.Error("ErrUsage matching")
	}
}

func TestDispatch(t *testing.T) {
	subs := map[string]func(context.Context, []string, IO) error{
		"ok":  func(context.Context, []string, IO) error { return nil },
		"bad": func(context.Context, []string, IO) error { return Usagef("p bad: -x") },
	}
	var out, errb bytes.Buffer
	o := IO{Stdout: &out, Stderr: &errb}
	for _, tc := range []struct {
		args []string
		code int
	}{{nil, 2}, {[]string{"-h"}, 0}, {[]string{"ok"}, 0}, {[]string{"bad"}, 2}, {[]string{"nope"}, 2}} {
		if c := Dispatch(context.Background(), "p", "usage: p CMD\n", subs, tc.args, o); c != tc.code {
			t.Errorf("%v: %d, want %d", tc.args, c, tc.code)
		}
	}
	if !strings.Contains(errb.String(), `p: unknown command "nope"`) {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestBuildInfo(t *testing.T) {
	b := BuildInfo()
	if b.Commit == "" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Errorf("%+v", b)
	}
}

//go:build unix

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"streamscale/env"
	"streamscale/internal/command"
)

// TestScenarioFlagBoundedRead: -scenario reads a regular file of at most
// env.MaxScenarioFile bytes. A FIFO with no writer (it must not block),
// /dev/zero (it used to grow without bound), a directory and a file one
// byte over the limit are usage errors naming the flag, the path and,
// for size, the limit.
func TestScenarioFlagBoundedRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, env.MaxScenarioFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want string }{
		{fifo, "fifo.json: not a regular file"},
		{"/dev/zero", "/dev/zero: not a regular file"},
		{dir, "not a regular file"},
		{big, "big.json: file too large: 1048577 bytes, limit 1048576"},
	} {
		_, err := resolveScenario("scenario", tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "eval: -scenario: ") || !errors.Is(err, command.ErrUsage) {
			t.Errorf("%s: err = %v, want a usage error containing %q", tc.arg, err, tc.want)
		}
	}
}

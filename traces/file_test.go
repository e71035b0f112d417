//go:build unix

package traces_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"streamscale/traces"
)

// TestLoadRefusesNonRegular: Load opens trace files as regular files of at
// most MaxFileBytes. A FIFO with no writer (it must not block), /dev/zero
// (it must not grow without bound), a directory and a (sparse) file one
// byte over the limit are refused with an error naming the path, and a
// named trace whose file is one of them does not fall back to the
// synthetic stand-in.
func TestLoadRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.csv")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.parquet")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.csv")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("count\n1\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(traces.MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	named := filepath.Join(dir, "named")
	if err := os.Mkdir(named, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(named, "taxi_nab_5min_2015-01-01_3600pts.csv"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, want string
	}{
		{fifo, "", "fifo.csv: not a regular file"},
		{zero, "", "zero.csv: not a regular file"},
		{sub, "", "dir.parquet: not a regular file"},
		{big, "", "big.csv: file too large: 67108865 bytes, limit 67108864"},
		{"taxi", named, "taxi_nab_5min_2015-01-01_3600pts.csv: not a regular file"},
	} {
		_, err := traces.Load(tc.name, traces.Options{Dir: tc.dir, Logf: func(string, ...any) { t.Errorf("%s: fell back", tc.name) }})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "traces: ") {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

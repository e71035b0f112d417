//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFile: a regular file within the limit is read whole; a FIFO
// (with no writer: it must not block), /dev/zero, a directory, a missing
// path and a file over the limit are refused, the error naming the path
// and, for size, the limit.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path    string
		limit   int64
		is      error
		wantErr string
	}{
		{small, 10, nil, ""},
		{small, 9, ErrTooLarge, "small.json: file too large: 10 bytes, limit 9"},
		{fifo, 1 << 20, ErrNotRegular, "fifo: not a regular file"},
		{"/dev/zero", 1 << 20, ErrNotRegular, "/dev/zero: not a regular file"},
		{dir, 1 << 20, ErrNotRegular, "not a regular file (mode d"},
		{filepath.Join(dir, "missing"), 1 << 20, fs.ErrNotExist, "missing"},
	} {
		data, err := ReadFile(tc.path, tc.limit)
		if tc.is == nil {
			if err != nil || string(data) != "0123456789" {
				t.Errorf("%s: %q, %v", tc.path, data, err)
			}
			continue
		}
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "regfile: ") {
			t.Errorf("%s: err = %v, want %v containing %q", tc.path, err, tc.is, tc.wantErr)
		}
	}
}

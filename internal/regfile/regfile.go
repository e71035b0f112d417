package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (a FIFO, a device, a socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file larger than the limit.
var ErrTooLarge = errors.New("file too large")

// ReadFile returns the contents of the regular file at path, at most limit
// bytes (limit > 0). The file is opened without blocking (O_NONBLOCK, so
// that a FIFO with no writer cannot hang it) and checked with fstat before
// anything is read; a file that grows past limit while it is read is
// refused too. Errors start with "regfile: " and name the path; one for a
// missing file satisfies errors.Is(err, fs.ErrNotExist).
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("regfile: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("regfile: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("regfile: %s: %w (mode %v)", path, ErrNotRegular, st.Mode().Type())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("regfile: %s: %w: %d bytes, limit %d", path, ErrTooLarge, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("regfile: %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("regfile: %s: %w: more than %d bytes (it grew while read), limit %d", path, ErrTooLarge, limit, limit)
	}
	return data, nil
}

// Reader returns ReadFile with limit bound, in the form
// env.ResolveScenario and costfile.Load take.
func Reader(limit int64) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) { return ReadFile(path, limit) }
}

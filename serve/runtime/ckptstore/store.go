package ckptstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"streamscale/internal/regfile"
)

const (
	prefix    = "ckpt-"
	suffix    = ".ssck"
	tmpPrefix = ".ckpt-"
	tmpSuffix = ".tmp"
)

// Name is the file name of checkpoint id: ckpt-<id, 20 digits>.ssck.
func Name(id uint64) string { return fmt.Sprintf("%s%020d%s", prefix, id, suffix) }

// parseName returns the checkpoint ID a file name says, if it is one.
func parseName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, suffix); !ok || len(s) != 20 {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil && id > 0
}

// Store writes checkpoints into a directory.
type Store struct {
	dir  string
	keep int
}

// Open returns a store writing into dir (created if missing, mode 0o755)
// that keeps the last keep checkpoints (keep ≥ 1). It removes temporary
// files that a write cut short by a crash left behind.
func Open(dir string, keep int) (*Store, error) {
	if keep < 1 {
		return nil, fmt.Errorf("ckptstore: keep %d checkpoints, want ≥ 1", keep)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ckptstore: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ckptstore: %w", err)
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, tmpPrefix) && strings.HasSuffix(n, tmpSuffix) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return nil, fmt.Errorf("ckptstore: remove a partial write: %w", err)
			}
		}
	}
	return &Store{dir: dir, keep: keep}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Save writes c atomically as Name(c.ID) — temporary file, fsync, rename,
// fsync of the directory — replacing a file of the same ID, then removes
// all but the last Keep checkpoints by ID. It returns the file's path.
func (s *Store) Save(c *Checkpoint) (string, error) {
	b, err := Encode(c)
	if err != nil {
		return "", err
	}
	path := filepath.Join(s.dir, Name(c.ID))
	if err := writeAtomic(s.dir, path, b); err != nil {
		return "", fmt.Errorf("ckptstore: %s: %w", path, err)
	}
	ids, err := List(s.dir)
	if err != nil {
		return path, err
	}
	removed := false
	for len(ids) > s.keep {
		if err := os.Remove(filepath.Join(s.dir, Name(ids[0]))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return path, fmt.Errorf("ckptstore: retention: %w", err)
		}
		ids, removed = ids[1:], true
	}
	if removed {
		if err := syncDir(s.dir); err != nil {
			return path, fmt.Errorf("ckptstore: %s: %w", s.dir, err)
		}
	}
	return path, nil
}

func writeAtomic(dir, path string, b []byte) error {
	f, err := os.CreateTemp(dir, tmpPrefix+"*"+tmpSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(b); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// List returns the IDs of the checkpoint files in dir, ascending (other
// files are ignored).
func List(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ckptstore: %w", err)
	}
	var ids []uint64
	for _, e := range ents {
		if id, ok := parseName(e.Name()); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Load reads the checkpoint file at path: a regular file of at most
// MaxFile bytes (internal/regfile), intact (Decode), and, when its name is
// a checkpoint's (Name), holding that checkpoint. Errors name the file.
func Load(path string) (Checkpoint, error) {
	b, err := regfile.ReadFile(path, MaxFile)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ckptstore: %w", err)
	}
	c, err := Decode(b)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ckptstore: %s: %w", path, err)
	}
	if id, ok := parseName(filepath.Base(path)); ok && id != c.ID {
		return Checkpoint{}, fmt.Errorf("ckptstore: %s: %w: the name says checkpoint %d, the file holds %d", path, ErrCorrupt, id, c.ID)
	}
	return c, nil
}

// ErrNone is wrapped by Latest's error for a directory without checkpoint
// files.
var ErrNone = errors.New("no checkpoint")

// Latest reads the newest checkpoint in dir (the highest ID) and returns
// it with its path. A newest file that is refused is an error naming it
// and the previous file: Latest does not fall back by itself.
func Latest(dir string) (Checkpoint, string, error) {
	ids, err := List(dir)
	if err != nil {
		return Checkpoint{}, "", err
	}
	if len(ids) == 0 {
		return Checkpoint{}, "", fmt.Errorf("ckptstore: %s: %w (no %s*%s file)", dir, ErrNone, prefix, suffix)
	}
	path := filepath.Join(dir, Name(ids[len(ids)-1]))
	c, err := Load(path)
	if err != nil {
		if len(ids) > 1 {
			return Checkpoint{}, path, fmt.Errorf("%w (the previous checkpoint is %s: remove the refused file to restore that one)", err, Name(ids[len(ids)-2]))
		}
		return Checkpoint{}, path, err
	}
	return c, path, nil
}

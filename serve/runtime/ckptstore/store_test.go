package ckptstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the seed corpus under testdata/fuzz")

// sample is a small checkpoint of a two-operator job.
func sample(id uint64) *Checkpoint {
	st := map[uint32]map[uint64][]byte{
		0<<8 | 5:   {5: {1, 2}, 133: {}},
		1<<8 | 127: {255: {9}, 127: bytes.Repeat([]byte{7}, 40)},
		1<<8 | 3:   {},
	}
	return &Checkpoint{Job: "app=wc seed=1 rate=1000", ID: id, Cut: 1000 * id, Ops: 2, State: st}
}

func TestEncodeCanonicalRoundTrip(t *testing.T) {
	a, err := Encode(sample(3))
	if err != nil {
		t.Fatal(err)
	}
	// The same checkpoint built in another insertion order encodes to the
	// same bytes: no map order reaches the file.
	c := sample(3)
	c.State = map[uint32]map[uint64][]byte{1<<8 | 127: {127: bytes.Repeat([]byte{7}, 40), 255: {9}}, 0<<8 | 5: {133: {}, 5: {1, 2}}}
	b, err := Encode(c)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("encodings differ (%v)", err)
	}
	got, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 3 || got.Cut != 3000 || got.Ops != 2 || got.Job != c.Job || len(got.State) != 2 || !bytes.Equal(got.State[1<<8|127][127], c.State[1<<8|127][127]) || got.State[0<<8|5][133] == nil {
		t.Fatalf("decoded %+v", got)
	}
	if again, _ := Encode(&got); !bytes.Equal(again, a) {
		t.Fatal("Encode(Decode(b)) != b")
	}
	for name, bad := range map[string]*Checkpoint{
		"id 0":          {ID: 0, Ops: 1},
		"no operators":  {ID: 1, Ops: 0},
		"op range":      {ID: 1, Ops: 1, State: map[uint32]map[uint64][]byte{1 << 8: {0: nil}}},
		"key not in kg": {ID: 1, Ops: 1, State: map[uint32]map[uint64][]byte{0<<8 | 1: {2: nil}}},
		"job not utf-8": {ID: 1, Ops: 1, Job: "\xff"},
	} {
		if _, err := Encode(bad); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

// TestDecodeRefuses: every kind of damage is refused with an error that
// wraps ErrCorrupt and says what is wrong.
func TestDecodeRefuses(t *testing.T) {
	good, err := Encode(sample(1))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte { b := slices.Clone(good); b[i] ^= 0x40; return b }
	resum := func(b []byte) []byte {
		end := len(b) - trailer
		binary.LittleEndian.PutUint32(b[end:], crcOf(b[:end]))
		return b
	}
	// A body that is well framed and checksummed but says key group 200.
	badGroup := slices.Clone(good)
	at := header + 8 + 8 + 2 + 4 + len(sample(1).Job) + 4 + 2
	binary.LittleEndian.PutUint16(badGroup[at:], 200)
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":          {nil, "not a streamscale checkpoint"},
		"foreign":        {[]byte("PAR1 this is parquet, not a checkpoint"), "not a streamscale checkpoint"},
		"magic prefix":   {good[:5], "truncated"},
		"version":        {resum(func() []byte { b := slices.Clone(good); b[7] = 9; return b }()), "format version 9"},
		"truncated":      {good[:len(good)-1], "truncated"},
		"half":           {good[:len(good)/2], "truncated"},
		"trailing":       {append(slices.Clone(good), 0), "1 bytes after the end"},
		"body bit flip":  {flip(header + 3), "checksum mismatch"},
		"sum bit flip":   {flip(len(good) - 1), "checksum mismatch"},
		"length":         {func() []byte { b := slices.Clone(good); b[8]++; return b }(), "truncated"},
		"group in range": {resum(badGroup), "out of range"},
	} {
		_, err := Decode(tc.b)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an ErrCorrupt saying %q", name, err, tc.want)
		}
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestSaveRetention: Save keeps the last Keep checkpoints by ID, and a
// checkpoint saved again with the same ID replaces the file.
func TestSaveRetention(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 5; id++ {
		path, err := s.Save(sample(id))
		if err != nil || filepath.Base(path) != Name(id) {
			t.Fatalf("save %d: %s, %v", id, path, err)
		}
	}
	ids, err := List(dir)
	if err != nil || !slices.Equal(ids, []uint64{3, 4, 5}) {
		t.Fatalf("kept %v (%v), want [3 4 5]", ids, err)
	}
	c := sample(5)
	c.Cut = 42
	if _, err := s.Save(c); err != nil {
		t.Fatal(err)
	}
	got, path, err := Latest(dir)
	if err != nil || got.ID != 5 || got.Cut != 42 || filepath.Base(path) != Name(5) {
		t.Fatalf("latest %d cut %d at %s (%v)", got.ID, got.Cut, path, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Fatalf("%d files in the directory, want the 3 checkpoints and no temporary file", len(ents))
	}
	if _, err := Open(dir, 0); err == nil {
		t.Fatal("keep 0 accepted")
	}
}

// TestCrashMidWrite: a write cut short leaves a temporary file (never a
// partial checkpoint under its final name); Latest ignores it and Open
// removes it. A failed Save leaves the previous checkpoint in place.
func TestCrashMidWrite(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Save(sample(1)); err != nil {
		t.Fatal(err)
	}
	full, _ := Encode(sample(2))
	tmp := filepath.Join(dir, tmpPrefix+"123"+tmpSuffix)
	if err := os.WriteFile(tmp, full[:len(full)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if c, _, err := Latest(dir); err != nil || c.ID != 1 {
		t.Fatalf("latest %d, %v; want checkpoint 1", c.ID, err)
	}
	if _, err := s.Save(&Checkpoint{ID: 2, Ops: 0}); err == nil {
		t.Fatal("saved a bad checkpoint")
	}
	if c, _, err := Latest(dir); err != nil || c.ID != 1 {
		t.Fatalf("after a failed save: latest %d, %v; want checkpoint 1", c.ID, err)
	}
	if _, err := Open(dir, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file still there after Open: %v", err)
	}
}

// TestLoadRefuses: a damaged, renamed, foreign or non-regular file is
// refused with an error naming it; Latest names the previous checkpoint
// instead of falling back to it.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if _, err := s.Save(sample(id)); err != nil {
			t.Fatal(err)
		}
	}
	newest := filepath.Join(dir, Name(2))
	b, _ := os.ReadFile(newest)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(newest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, path, err := Latest(dir)
	if !errors.Is(err, ErrCorrupt) || path != newest || !strings.Contains(err.Error(), newest) || !strings.Contains(err.Error(), "checksum mismatch") || !strings.Contains(err.Error(), Name(1)) {
		t.Fatalf("latest with a corrupt newest file: %v", err)
	}
	renamed := filepath.Join(dir, Name(7))
	good, _ := Encode(sample(1))
	os.WriteFile(renamed, good, 0o644)
	if _, err := Load(renamed); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "the name says checkpoint 7") {
		t.Fatalf("renamed file: %v", err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere.bin")
	os.WriteFile(other, good, 0o644)
	if c, err := Load(other); err != nil || c.ID != 1 {
		t.Fatalf("a checkpoint under another name: %d, %v", c.ID, err)
	}
	fifo := filepath.Join(t.TempDir(), Name(1))
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("fifo: %v", err)
	}
	if _, _, err := Latest(t.TempDir()); !errors.Is(err, ErrNone) {
		t.Fatalf("empty directory: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := Encode(&c)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("decoded a file that does not re-encode to itself (%v)", err)
		}
	})
}

// seeds are the fuzz seeds: valid files and damaged ones. With -update
// they are written to the committed corpus too.
func seeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, c := range []*Checkpoint{sample(1), {ID: 1, Ops: 1}, {ID: 9, Cut: 5, Ops: 3, Job: "app=etl", State: map[uint32]map[uint64][]byte{2 << 8: {0: {1}, 128: {2}}}}} {
		b, err := Encode(c)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b, b[:len(b)-3], append(slices.Clone(b), 1))
	}
	out = append(out, []byte("SSCKPT"), []byte("not a checkpoint"))
	if *update {
		dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.Fatal(err)
		}
		for i, b := range out {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
				f.Fatal(err)
			}
		}
	}
	return out
}

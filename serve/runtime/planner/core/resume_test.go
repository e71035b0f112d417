package core

import (
	"strings"
	"testing"
)

// resumeOption parses the script option resume=ID:CUT: a restored
// checkpoint with three keys (operator 0 key group 1; operator 1 key
// groups 43 and 100).
func resumeOption(d *driver, v string) *Resume {
	id, cut, _ := strings.Cut(v, ":")
	return &Resume{ID: uint64(d.int(id)), Cut: d.int(cut), State: map[uint32]map[uint64][]byte{
		0<<8 | 1: {1: {1}}, 1<<8 | 43: {43: {2}}, 1<<8 | 100: {100: {3}},
	}}
}

// TestResumeRefusesForeignState: a restored checkpoint whose state does
// not fit the application is refused by New.
func TestResumeRefusesForeignState(t *testing.T) {
	base := Config{Ops: 2, Workers: 1, Heartbeat: 1, Tick: 1, Miss: 1, JoinTimeout: 1}
	for name, r := range map[string]*Resume{
		"operator": {ID: 1, State: map[uint32]map[uint64][]byte{2<<8 | 1: {1: nil}}},
		"group":    {ID: 1, State: map[uint32]map[uint64][]byte{0<<8 | 1: {2: nil}}},
		"id":       {ID: 0},
		"cut":      {ID: 1, Cut: -1},
	} {
		cfg := base
		cfg.Restore = r
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	cfg := base
	cfg.Restore = &Resume{ID: 3, Cut: 7}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if id, cut, st := c.Checkpoint(); id != 3 || cut != 7 || st == nil {
		t.Fatalf("checkpoint %d cut %d state %v", id, cut, st)
	}
}

package wire

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"testing"

	"streamscale/serve/runtime/ops"
)

func TestKeyGroupsMatchOps(t *testing.T) {
	if KeyGroups != ops.KeyGroups {
		t.Fatalf("wire.KeyGroups %d, ops.KeyGroups %d", KeyGroups, ops.KeyGroups)
	}
}

// sample returns one message of every kind.
func sample() []interface{ Append([]byte) []byte } {
	owners := make([][KeyGroups]uint32, 2)
	for g := range KeyGroups {
		owners[0][g] = uint32(g % 2)
		owners[1][g] = 7
	}
	return []interface{ Append([]byte) []byte }{
		&Hello{ID: 3, Epoch: 9, Addr: "127.0.0.1:4000", Token: "secret"},
		&Heartbeat{From: 3, Epoch: 9},
		&Batch{From: 2, Epoch: 5, Records: []Record{{Op: 1, Exp: 3, Key: 42, Input: 7, Seq: 8, Payload: []byte("hello")}, {Op: 0, Key: 1, Payload: []byte{}}}},
		&Metrics{From: 1, Epoch: 2, IntervalS: 1.5, Queue: 4, RemoteDests: 2, LoadNS: 99, Tasks: []TaskMetrics{{1, 2, 3, 4, 5, 6, 7, 8, 9}}, Edges: []EdgeMetrics{{3, 4}}},
		&Alloc{Epoch: 3, Millicores: []uint32{250, 1500}},
		&Placement{Epoch: 4, Members: []Member{{0, "a:1"}, {1, "b:2"}, {7, "c:3"}}, Owners: owners, Moves: []Move{{Op: 0, KG: 1, From: 0, To: 1}}},
		&State{Epoch: 4, From: 1, Op: 1, KG: 5, Keys: []uint64{5, 133}, Values: [][]byte{[]byte("x"), {}}, Queued: []Record{{Op: 1, Key: 261, Input: 1, Payload: []byte("q")}}},
		&Done{From: 2, Entries: []DoneEntry{{Input: 1, W: Weight{1, 2}}}},
		&Migrated{From: 1, Epoch: 4, PauseNS: 5, WaitNS: 6, MovedGroups: 7, MovedKeys: 8, MovedBytes: 9, MovedQueued: 10},
		&Checkpoint{ID: 3, Epoch: 4},
		&Snapshot{ID: 3, From: 1, Op: 1, KG: 5, Keys: []uint64{5, 133}, Values: [][]byte{[]byte("x"), {}}},
		&Snapshot{ID: 3, From: NoID, Op: 0, KG: 9},
		&SnapshotDone{ID: 3, From: 1, Epoch: 4, OK: true, Frames: 2, Keys: 2, Bytes: 17, AlignNS: 5, SnapNS: 6},
		&SnapshotDone{ID: 4, From: 2, Epoch: 4},
		&Restore{Epoch: 5, ID: 3, Frames: 2},
		&Barrier{ID: 3, Cut: 1000, Epoch: 4, From: NoID, Op: NoOp, Members: []uint32{0, 2, 5}},
		&Barrier{ID: 3, Cut: 1000, Epoch: 4, From: 2, Op: 1},
		&Abort{ID: 3},
		&Bye{Reason: ByeDead, Text: "worker 3 missed 10 heartbeats"},
	}
}

func decode(k Kind, p []byte) (any, error) {
	switch k {
	case KindHello:
		m, err := DecodeHello(p)
		return &m, err
	case KindHeartbeat:
		m, err := DecodeHeartbeat(p)
		return &m, err
	case KindBatch:
		m, err := DecodeBatch(p, nil)
		return &m, err
	case KindMetrics:
		m, err := DecodeMetrics(p)
		return &m, err
	case KindAlloc:
		m, err := DecodeAlloc(p)
		return &m, err
	case KindPlacement:
		m, err := DecodePlacement(p)
		return &m, err
	case KindState:
		m, err := DecodeState(p)
		return &m, err
	case KindMark, KindEnd:
		m, err := DecodeMark(p)
		return &m, err
	case KindDone:
		m, err := DecodeDone(p, nil)
		return &m, err
	case KindMigrated:
		m, err := DecodeMigrated(p)
		return &m, err
	case KindCheckpoint:
		m, err := DecodeCheckpoint(p)
		return &m, err
	case KindSnapshot:
		m, err := DecodeSnapshot(p)
		return &m, err
	case KindSnapshotDone:
		m, err := DecodeSnapshotDone(p)
		return &m, err
	case KindRestore:
		m, err := DecodeRestore(p)
		return &m, err
	case KindBarrier:
		m, err := DecodeBarrier(p)
		return &m, err
	case KindAbort:
		m, err := DecodeAbort(p)
		return &m, err
	case KindBye:
		m, err := DecodeBye(p)
		return &m, err
	}
	return nil, errors.New("unknown")
}

func TestRoundTrip(t *testing.T) {
	var stream []byte
	msgs := sample()
	for _, m := range msgs {
		stream = m.Append(stream)
	}
	mk := Mark{Epoch: 3, From: 2}
	stream = mk.Append(stream, KindEnd)
	r := bufio.NewReader(bytes.NewReader(stream))
	var buf []byte
	for i, want := range msgs {
		k, p, nb, err := ReadFrame(r, buf)
		buf = nb
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		got, err := decode(k, p)
		if err != nil {
			t.Fatalf("frame %d (%v): %v", i, k, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("frame %d (%v):\n got %+v\nwant %+v", i, k, got, want)
		}
	}
	k, p, _, err := ReadFrame(r, buf)
	if err != nil || k != KindEnd {
		t.Fatalf("end frame: %v %v", k, err)
	}
	if m, err := DecodeMark(p); err != nil || m != mk {
		t.Fatalf("end: %+v %v", m, err)
	}
	if _, _, _, err := ReadFrame(r, buf); err.Error() != "EOF" {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

func TestBadFrames(t *testing.T) {
	good := (&Hello{ID: 1, Addr: "x"}).Append(nil)
	for name, b := range map[string][]byte{
		"short header": {1, 0},
		"zero length":  {0, 0, 0, 0},
		"too long":     {0xff, 0xff, 0xff, 0x7f, 1},
		"cut body":     good[:len(good)-1],
		"unknown kind": {1, 0, 0, 0, 99},
	} {
		if _, _, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(b)), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: ReadFrame error %v, want ErrMalformed", name, err)
		}
		if _, _, _, err := SplitFrame(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: SplitFrame error %v, want ErrMalformed", name, err)
		}
	}
}

func TestBadPayloads(t *testing.T) {
	// Every strict prefix of every payload, and every payload with a
	// trailing byte, is refused.
	for _, m := range sample() {
		f := m.Append(nil)
		k, p, _, err := SplitFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(p) {
			if _, err := decode(k, p[:n]); !errors.Is(err, ErrMalformed) {
				t.Errorf("%v cut to %d of %d bytes: error %v, want ErrMalformed", k, n, len(p), err)
			}
		}
		if _, err := decode(k, append(p[:len(p):len(p)], 0)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%v with a trailing byte: error %v", k, err)
		}
	}
	// Semantic checks.
	pl := &Placement{Epoch: 1, Members: []Member{{0, "a"}}, Owners: make([][KeyGroups]uint32, 1)}
	pl.Owners[0][3] = 5
	if _, err := DecodePlacement(pl.Append(nil)[5:]); err == nil {
		t.Error("placement with a non-member owner accepted")
	}
	pl.Owners[0][3] = 0
	pl.Moves = []Move{{Op: 0, KG: 200, From: 1, To: 0}}
	if _, err := DecodePlacement(pl.Append(nil)[5:]); err == nil {
		t.Error("placement with key group 200 accepted")
	}
	st := &State{KG: 3, Keys: []uint64{4}, Values: [][]byte{nil}}
	if _, err := DecodeState(st.Append(nil)[5:]); err == nil {
		t.Error("state with a key outside its key group accepted")
	}
	al := &Alloc{Millicores: []uint32{0}}
	if _, err := DecodeAlloc(al.Append(nil)[5:]); err == nil {
		t.Error("zero allocation accepted")
	}
	for name, m := range map[string]interface{ Append([]byte) []byte }{
		"snapshot key outside its key group": &Snapshot{KG: 3, Keys: []uint64{4}, Values: [][]byte{nil}},
		"snapshot key repeated":              &Snapshot{KG: 3, Keys: []uint64{3, 3}, Values: [][]byte{nil, nil}},
		"snapshot key group 128":             &Snapshot{KG: KeyGroups},
		"failed snapshot with frames":        &SnapshotDone{Frames: 1},
		"restore for epoch 0":                &Restore{ID: 1},
		"barrier of checkpoint 0":            &Barrier{From: NoID, Op: NoOp, Members: []uint32{0}},
		"planner barrier with an operator":   &Barrier{ID: 1, From: NoID, Op: 0, Members: []uint32{0}},
		"worker barrier without an operator": &Barrier{ID: 1, From: 1, Op: NoOp},
		"worker barrier, operator 256":       &Barrier{ID: 1, From: 1, Op: MaxOps},
		"planner barrier without members":    &Barrier{ID: 1, From: NoID, Op: NoOp},
		"worker barrier with members":        &Barrier{ID: 1, From: 1, Op: 0, Members: []uint32{1}},
		"members not ascending":              &Barrier{ID: 1, From: NoID, Op: NoOp, Members: []uint32{2, 1}},
		"member repeated":                    &Barrier{ID: 1, From: NoID, Op: NoOp, Members: []uint32{1, 1}},
		"member NoID":                        &Barrier{ID: 1, From: NoID, Op: NoOp, Members: []uint32{1, NoID}},
		"abort of checkpoint 0":              &Abort{},
		"bye without a reason":               &Bye{},
		"bye of an unknown reason":           &Bye{Reason: byeMax},
	} {
		f := m.Append(nil)
		if _, err := decode(Kind(f[4]), f[5:]); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", name, err)
		}
	}
	if _, err := DecodeSnapshotDone(append((&SnapshotDone{}).Append(nil)[5:5+20], append([]byte{2}, make([]byte, 4+8+8+8+8)...)...)); !errors.Is(err, ErrMalformed) {
		t.Errorf("snapshot-done with ok flag 2: error %v", err)
	}
	b := &Batch{Records: []Record{{Exp: MaxExp + 1}}}
	if _, err := DecodeBatch(b.Append(nil)[5:], nil); err == nil {
		t.Error("record exponent above MaxExp accepted")
	}
}

func FuzzDecode(f *testing.F) {
	for _, m := range sample() {
		f.Add(m.Append(nil))
	}
	f.Add([]byte{5, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff})
	// Barriers cut short, with a forged member count, and an abort of 0.
	pb := (&Barrier{ID: 2, Cut: 9, Epoch: 1, From: NoID, Op: NoOp, Members: []uint32{0, 1}}).Append(nil)
	f.Add(pb[:len(pb)-3])
	forged := bytes.Clone(pb)
	forged[4+1+8+8+8+4+2] = 0xff // the member count
	f.Add(forged)
	f.Add((&Abort{}).Append(nil))
	f.Add((&Bye{Reason: byeMax, Text: "x"}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			k, p, rest, err := SplitFrame(b)
			if err != nil {
				return
			}
			m, err := decode(k, p)
			if err == nil {
				// A decoded message re-encodes to the same payload.
				if a, ok := m.(interface{ Append([]byte) []byte }); ok {
					_, p2, _, err := SplitFrame(a.Append(nil))
					if err != nil || !bytes.Equal(p, p2) {
						t.Fatalf("%v: re-encoding differs", k)
					}
				}
			}
			b = rest
		}
	})
}

// TestSplitConserves checks Split against the obvious sum: a parent's kept
// weight plus its children's equals its own, for every fan-out up to 300.
func TestSplitConserves(t *testing.T) {
	for _, e := range []uint8{0, 1, 60, 63, 64, 65, 100, 120} {
		for k := 0; k <= 300; k++ {
			ce, back, ok := Split(e, k)
			if !ok {
				if int(e)+bitsLen(k-1) <= MaxExp {
					t.Fatalf("e=%d k=%d refused", e, k)
				}
				continue
			}
			sum := back
			for range k {
				var of bool
				sum, of = sum.Add(ExpWeight(ce))
				if of {
					t.Fatalf("overflow")
				}
			}
			if sum != ExpWeight(e) {
				t.Fatalf("e=%d k=%d: back+children = %v, want %v", e, k, sum, ExpWeight(e))
			}
		}
	}
	if _, _, ok := Split(125, 5); ok {
		t.Error("Split(125, 5) needs exponent 128 but was accepted")
	}
}

func bitsLen(x int) int {
	n := 0
	for x > 0 {
		n++
		x >>= 1
	}
	return n
}

func TestStateWriter(t *testing.T) {
	want := State{Epoch: 3, From: 2, Op: 1, KG: 5, Keys: []uint64{5, 133}, Values: [][]byte{[]byte("ab"), {}}, Queued: []Record{{Op: 1, Key: 261, Payload: []byte("q")}}}
	var w StateWriter
	b := w.Begin(nil, 3, 2, 1, 5)
	for i, k := range want.Keys {
		b = w.AddKey(b, k, want.Values[i])
	}
	b = w.Queued(b)
	b = w.AddQueued(b, &want.Queued[0])
	b = w.Finish(b)
	if !bytes.Equal(b, want.Append(nil)) {
		t.Fatal("StateWriter and State.Append differ")
	}
}

func TestByeKeepsTextShort(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 2*MaxAddr)
	f := (&Bye{Reason: ByeRefused, Text: string(long)}).Append(nil)
	m, err := DecodeBye(f[5:])
	if err != nil || len(m.Text) != MaxAddr || m.Reason != ByeRefused {
		t.Fatalf("bye with a %d-byte text: %q (%d bytes), %v", len(long), m.Reason, len(m.Text), err)
	}
	if ByeDead.String() != "dead" || ByeReason(9).String() != "bye(9)" {
		t.Fatalf("names %q %q", ByeDead, ByeReason(9))
	}
}

package core

import (
	"testing"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// FuzzStep feeds the core an arbitrary sequence of events — worker frames
// with any fields, from any stream, at any time — decoded from the input
// two bytes an event. The core must never panic, and every key group's
// owner must always be a member it admitted.
func FuzzStep(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 1, 1, 2, 2, 3, 0, 4, 0, 5, 1})
	f.Add([]byte{0, 0, 1, 0, 1, 1, 2, 2, 6, 3, 7, 1, 8, 0, 8, 1, 3, 9, 9, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := New(Config{Ops: 2, Workers: 2, Heartbeat: 100 * time.Millisecond, Tick: 10 * time.Millisecond, Miss: 3,
			JoinTimeout: time.Second, CheckpointInterval: 50 * time.Millisecond, CheckpointTimeout: 200 * time.Millisecond, CheckpointMode: ModeBarrier,
			Restart: Restart{Strategy: RestartFixedDelay, Attempts: 2, Delay: 20 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		if len(b)%2 == 1 && b[0]&1 == 1 {
			c.cfg.CheckpointMode, c.ck.mode = ModePause, ModePause
		}
		var now time.Duration
		log := Log{}
		admitted := map[uint32]bool{}
		for i := 0; i+1 < len(b); i += 2 {
			op, x := b[i]%12, b[i+1]
			conn, id := uint64(x%5), uint32(x%4)
			var ev Event
			switch op {
			case 0:
				ev = Begin{}
			case 1:
				ev = Hello{Conn: uint64(i + 1), ID: id, Addr: "a"}
			case 2:
				ev = Scaled{N: int(x % 5)}
			case 3:
				now += time.Duration(x) * 5 * time.Millisecond
				ev = Tick{}
			case 4:
				ev = Beat{Conn: conn, From: id}
			case 5:
				ev = StreamEnded{Conn: conn}
			case 6:
				ev = ScaleRequest{ID: uint64(x), N: int(x % 6)}
			case 7:
				ev = Migrated{Conn: conn, Report: wire.Migrated{From: id, Epoch: c.Epoch() - uint64(x%2)}}
			case 8:
				ev = Snapshot{Conn: conn, S: wire.Snapshot{ID: uint64(x % 4), From: id, Op: uint16(x % 3), KG: uint16(x) * 3, Keys: []uint64{uint64(x)}, Values: [][]byte{{x}}}}
			case 9:
				ev = SnapshotDone{Conn: conn, D: wire.SnapshotDone{ID: uint64(x % 4), From: id, Epoch: c.Epoch(), OK: x%3 != 0, Frames: uint32(x % 3)}}
			case 10:
				log.Inputs += int(x)
				log.Done = min(log.Inputs, log.Done+int(x)/2)
				ev = Completed{}
			case 11:
				ev = [...]Event{EndLoad{}, FinalCheckpoint{}}[x%2]
			}
			for _, a := range c.Step(now, log, ev) {
				switch a := a.(type) {
				case Bind:
					admitted[a.ID] = true
				case Replay:
					if !a.OpenOnly {
						log.Done = min(log.Done, a.From)
					}
				}
			}
			for o := range c.owners {
				for g := range ops.KeyGroups {
					if !admitted[c.owners[o][g]] {
						t.Fatalf("step %d: key group %d/%d owned by %d, never admitted", i/2, o, g, c.owners[o][g])
					}
				}
			}
		}
	})
}

package worker

import (
	"context"
	"encoding/binary"
	"io"
	goruntime "runtime"
	"testing"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// kvApp is one stateful operator.
var kvApp = ops.App{Name: "kv", Operators: []ops.Spec{{Name: "kv", Stateful: true, New: func() ops.Operator { return nil }}}}

// BenchmarkMigrationPause measures a worker's pause when it hands over all
// 128 key groups of an operator holding 40,000 keys (8-byte values) to a
// peer: drain, take the groups' state and queues, encode them into the
// peer's send buffer, resume (CLASP's protocol; the network send happens
// after the pause). Reports the mean pause in ms. Sub-benchmark settled
// collects the setup's garbage (40,000 fresh values) before the timed
// part; fresh does not, so a collection the setup started may run into the
// pause.
func BenchmarkMigrationPause(b *testing.B) {
	b.Run("settled", func(b *testing.B) { benchmarkMigrationPause(b, true) })
	b.Run("fresh", func(b *testing.B) { benchmarkMigrationPause(b, false) })
}

func benchmarkMigrationPause(b *testing.B, settle bool) {
	const keys = 40_000
	client := transport.NewClient()
	defer client.CloseIdle()
	var total time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		w, err := New(Config{ID: 0, App: kvApp, MigrationTimeout: time.Millisecond, Log: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		members := []wire.Member{{ID: 0, Addr: "127.0.0.1:1"}, {ID: 1, Addr: "127.0.0.1:1"}}
		pl := wire.Placement{Epoch: 1, Members: members, Owners: make([][ops.KeyGroups]uint32, 1)}
		done := make(chan struct{})
		w.migrate(ctx, client, placeReq{pl: pl, installed: done})
		var v [8]byte
		for k := range uint64(keys) {
			binary.LittleEndian.PutUint64(v[:], k)
			w.tasks[0].state[ops.KeyGroup(k)][k] = append([]byte(nil), v[:]...)
		}
		next := wire.Placement{Epoch: 2, Members: members, Owners: make([][ops.KeyGroups]uint32, 1)}
		for g := range ops.KeyGroups {
			next.Owners[0][g] = 1
		}
		next.Moves = diff(pl.Owners, next.Owners)
		if err := w.checkPlacement(&next); err != nil {
			b.Fatal(err)
		}
		if settle {
			goruntime.GC() // the setup's garbage is not the pause's
		}
		b.StartTimer()
		rep := w.migrate(ctx, client, placeReq{pl: next, installed: make(chan struct{})})
		b.StopTimer()
		if rep.MovedKeys != keys {
			b.Fatalf("moved %d keys, want %d", rep.MovedKeys, keys)
		}
		total += time.Duration(rep.PauseNS)
		n++
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(n), "pause-ms")
}

package planner

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime/ckptstore"
	"streamscale/serve/runtime/worker"
)

// restartRun runs cfg on two fresh in-process workers; stop, if set, is
// polled every row and ends the planner (its death, as far as the job
// goes: the workers' streams end and they stop) when it returns true.
func restartRun(t *testing.T, cfg Config, stop func() bool) (Result, *Planner, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &inproc{t: t, planner: ln.Addr().String(), app: cfg.App, cfg: worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4}}
	defer prov.Close()
	cfg.Provider = prov
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if stop != nil {
		go func() {
			for ctx.Err() == nil && !stop() {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
		}()
	}
	res, err := p.Serve(ctx, ln, nil)
	return res, p, err
}

// TestRestartFromStore: a planner writing its checkpoints to a store dies
// mid-run; a planner of the same job restored from the store's latest
// checkpoint, on fresh workers, completes the job with the oracle's word
// counts in every key group and every key's inputs reaching the ledger in
// order, each once (exactly-once state across the planner's death).
func TestRestartFromStore(t *testing.T) {
	dir := t.TempDir()
	store, err := ckptstore.Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{App: ledgerWC(), Seed: 9, Rate: 1500, Duration: 2 * time.Second, Workers: 2, Miss: 10, CheckpointInterval: 150 * time.Millisecond, Store: store}
	first, _, err := restartRun(t, cfg, func() bool { ids, _ := ckptstore.List(dir); return len(ids) >= 2 })
	if err == nil || first.CheckpointsSaved < 2 || first.CheckpointSaveErrors != 0 {
		t.Fatalf("the first planner: %v, %d checkpoints saved (%d failed)", err, first.CheckpointsSaved, first.CheckpointSaveErrors)
	}
	c, path, err := ckptstore.Latest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Job != Job(cfg) || c.Cut == 0 || c.Cut >= 3000 {
		t.Fatalf("latest checkpoint %d: job %q, cut %d", c.ID, c.Job, c.Cut)
	}
	cfg.Restore, cfg.RestoreFrom = &c, path
	res, p, err := restartRun(t, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("resumed %+v: inputs %d completed %d dup %d; checkpoints %d saved %d", res.Resumed, res.Inputs, res.Completed, res.Duplicated, res.Checkpoints, res.CheckpointsSaved)
	if res.Resumed == nil || res.Resumed.Cut != int(c.Cut) || res.Inputs != 3000 || res.Completed != res.Inputs || res.Duplicated != 0 || res.Lost != 0 {
		t.Fatalf("resumed %+v: inputs %d, completed %d, duplicated %d", res.Resumed, res.Inputs, res.Completed, res.Duplicated)
	}
	counts, covered := p.CheckpointState(1)
	ledger, _ := p.CheckpointState(0)
	if covered != int(res.Inputs) {
		t.Fatalf("the final checkpoint covers %d of %d inputs", covered, res.Inputs)
	}
	checkExact(t, cfg.App, cfg.Seed, int(res.Inputs), counts, ledger)
	last, _, err := ckptstore.Latest(dir)
	if err != nil || last.Cut != uint64(res.Inputs) || last.ID <= c.ID {
		t.Fatalf("the store's latest after the restored run: checkpoint %d cut %d (%v)", last.ID, last.Cut, err)
	}
}

// TestRestoreRefusesAnotherJob: a checkpoint of another job (another seed,
// another application) or one covering more inputs than the load has is
// refused by New with an error saying so.
func TestRestoreRefusesAnotherJob(t *testing.T) {
	cfg := Config{App: ledgerWC(), Seed: 9, Rate: 100, Duration: time.Second, Workers: 1, Provider: &inproc{t: t}, CheckpointInterval: time.Second}
	other := cfg
	other.Seed = 10
	for name, tc := range map[string]struct {
		c    ckptstore.Checkpoint
		want string
	}{
		"seed":       {ckptstore.Checkpoint{Job: Job(other), ID: 1, Ops: 2}, "not of this one"},
		"operators":  {ckptstore.Checkpoint{Job: Job(cfg), ID: 1, Ops: 3}, "3 operators"},
		"beyond end": {ckptstore.Checkpoint{Job: Job(cfg), ID: 1, Ops: 2, Cut: 101}, "this job's load has 100"},
	} {
		c := cfg
		c.Restore, c.RestoreFrom = &tc.c, "ckpt"
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

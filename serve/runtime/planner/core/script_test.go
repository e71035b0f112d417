package core

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime/wire"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the scripts under testdata/")

// TestScripts runs the scripts under testdata/: each is a sequence of
// commands, each followed by "----" and the actions the core returned
// (see driver.run for the commands). With -rewrite the expected output is
// regenerated.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type block struct {
	cmd, want string
	line      int
}

func parseScript(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []block
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b := block{cmd: line, line: n}
		if !sc.Scan() || sc.Text() != "----" {
			return nil, fmt.Errorf("%s:%d: command %q without ----", path, n, line)
		}
		n++
		var want []string
		for sc.Scan() {
			n++
			if sc.Text() == "" {
				break
			}
			want = append(want, sc.Text())
		}
		b.want = strings.Join(want, "\n")
		out = append(out, b)
	}
	return out, sc.Err()
}

func runScript(t *testing.T, path string) {
	blocks, err := parseScript(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t}
	var rewritten strings.Builder
	for _, b := range blocks {
		got := strings.TrimRight(d.run(b.cmd), "\n")
		if got == "" {
			got = "ok"
		}
		if *rewrite {
			fmt.Fprintf(&rewritten, "%s\n----\n%s\n\n", b.cmd, got)
			continue
		}
		if got != b.want {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, b.line, b.cmd, got, b.want)
		}
	}
	if *rewrite {
		head := leadingComments(path)
		if err := os.WriteFile(path, []byte(head+strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// leadingComments returns the comment lines a script opens with (kept by
// -rewrite; comments between blocks are not).
func leadingComments(path string) string {
	b, _ := os.ReadFile(path)
	var out strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		out.WriteString(l + "\n")
	}
	if out.Len() > 0 {
		out.WriteString("\n")
	}
	return out.String()
}

// driver plays the shell and the workers for a script.
type driver struct {
	t       *testing.T
	c       *Core
	cfg     Config
	now     time.Duration
	log     Log
	conns   uint64
	conn    map[uint32]uint64 // the worker's current stream
	silent  map[uint32]bool   // a worker that no longer beats
	beatAt  map[uint32]time.Duration
	frames  map[uint32]uint32 // snapshot frames sent for the run in progress
	pending string            // output of the steps of a multi-worker command
}

// run executes one command and returns what it printed.
//
//	config k=v...        a new core (ops workers hb tick miss join mig ckpt timeout mode steps=1s:3,2s:1 resume=ID:CUT
//	                     restart=fixed-delay:3:1s or failure-rate:2:1s:10s)
//	begin                Begin
//	hello w1 [any]       a stream from worker 1 (any: asking for no ID)
//	tick [d]             advance d (default one Tick) in one step, then Tick
//	advance d            advance d in Tick steps; every worker not silent beats each Heartbeat
//	silence w1           worker 1 stops beating (its process hangs)
//	kill w1              worker 1's stream ends (and it stops beating)
//	scaled n [err]       the provider's answer
//	scale n [id=K] [reason]  a ScaleRequest (even shares)
//	migrated w0 w1...    reports for the current epoch
//	log inputs=N done=M  the input log (with a Completed event)
//	snapshot w1 op kg key  one snapshot frame of the checkpoint in progress
//	ack w1 [id] [bad|refuse]  SnapshotDone (bad: frame count off; refuse: OK false)
//	checkpoint           FinalCheckpoint
//	endload              EndLoad
//	status               the core's state
func (d *driver) run(cmd string) string {
	f := strings.Fields(cmd)
	args := f[1:]
	switch f[0] {
	case "config":
		return d.config(args)
	case "status":
		return d.status()
	case "advance":
		return d.advance(d.dur(args[0]))
	case "tick":
		dt := d.cfg.Tick
		if len(args) > 0 {
			dt = d.dur(args[0])
		}
		d.now += dt
		return d.step(Tick{})
	case "silence", "kill":
		id := d.worker(args[0])
		d.silent[id] = true
		if f[0] == "kill" {
			return d.step(StreamEnded{Conn: d.conn[id]})
		}
		return ""
	}
	return d.step(d.event(f[0], args))
}

func (d *driver) event(name string, args []string) Event {
	switch name {
	case "begin":
		return Begin{}
	case "hello":
		id := d.worker(args[0])
		d.conns++
		delete(d.silent, id)
		d.beatAt[id] = d.now
		ask := id
		if len(args) > 1 && args[1] == "any" {
			ask = wire.NoID
		}
		return Hello{Conn: d.conns, ID: ask, Addr: fmt.Sprintf("w%d:1", id)}
	case "scaled":
		e := Scaled{N: d.int(args[0])}
		if len(args) > 1 {
			e.Err = errors.New(strings.Join(args[1:], " "))
		}
		return e
	case "scale":
		e := ScaleRequest{N: d.int(args[0]), Reason: "request"}
		for _, a := range args[1:] {
			if v, ok := strings.CutPrefix(a, "id="); ok {
				e.ID = uint64(d.int(v))
			} else {
				e.Reason = a
			}
		}
		return e
	case "migrated":
		return d.multi(args, func(id uint32) Event {
			return Migrated{Conn: d.conn[id], Report: wire.Migrated{From: id, Epoch: d.c.Epoch(), PauseNS: 1e6, WaitNS: 2e6}}
		})
	case "log":
		for _, a := range args {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "inputs":
				d.log.Inputs = d.int(v)
			case "done":
				d.log.Done = d.int(v)
			}
		}
		return Completed{}
	case "snapshot":
		id := d.worker(args[0])
		d.frames[id]++
		return Snapshot{Conn: d.conn[id], S: wire.Snapshot{ID: d.c.ck.next, From: id, Op: uint16(d.int(args[1])), KG: uint16(d.int(args[2])),
			Keys: []uint64{uint64(d.int(args[3]))}, Values: [][]byte{{1}}}}
	case "ack":
		return d.ack(args)
	case "checkpoint":
		return FinalCheckpoint{}
	case "endload":
		return EndLoad{}
	}
	d.t.Fatalf("unknown command %q", name)
	return nil
}

func (d *driver) ack(args []string) Event {
	id := d.worker(args[0])
	sd := wire.SnapshotDone{ID: d.c.ck.next, From: id, Epoch: d.c.Epoch(), OK: true, Frames: d.frames[id], AlignNS: 3e6, SnapNS: 1e5}
	for _, a := range args[1:] {
		switch a {
		case "bad":
			sd.Frames++
		case "refuse":
			sd.OK, sd.Frames = false, 0
		default:
			sd.ID = uint64(d.int(a))
		}
	}
	d.frames[id] = 0
	return SnapshotDone{Conn: d.conn[id], D: sd}
}

// multi steps one event per worker named and returns the last (the
// others' actions are printed by step as they happen).
func (d *driver) multi(args []string, ev func(uint32) Event) Event {
	for _, a := range args[:len(args)-1] {
		d.pending += d.step(ev(d.worker(a)))
	}
	return ev(d.worker(args[len(args)-1]))
}

func (d *driver) config(args []string) string {
	d.cfg = Config{Ops: 2, Workers: 2, Heartbeat: 200 * time.Millisecond, Tick: 10 * time.Millisecond, Miss: 5, JoinTimeout: time.Second,
		MigrationTimeout: 2 * time.Second, CheckpointTimeout: time.Second, CheckpointMode: ModeBarrier}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "ops":
			d.cfg.Ops = d.int(v)
		case "workers":
			d.cfg.Workers = d.int(v)
		case "hb":
			d.cfg.Heartbeat = d.dur(v)
		case "tick":
			d.cfg.Tick = d.dur(v)
		case "miss":
			d.cfg.Miss = d.int(v)
		case "join":
			d.cfg.JoinTimeout = d.dur(v)
		case "mig":
			d.cfg.MigrationTimeout = d.dur(v)
		case "ckpt":
			d.cfg.CheckpointInterval = d.dur(v)
		case "timeout":
			d.cfg.CheckpointTimeout = d.dur(v)
		case "mode":
			d.cfg.CheckpointMode = v
		case "resume":
			d.cfg.Restore = resumeOption(d, v)
		case "restart": // strategy[:attempts[:delay[:interval]]]
			f := strings.Split(v, ":")
			d.cfg.Restart = Restart{Strategy: f[0]}
			if len(f) > 1 {
				d.cfg.Restart.Attempts = d.int(f[1])
			}
			if len(f) > 2 {
				d.cfg.Restart.Delay = d.dur(f[2])
			}
			if len(f) > 3 {
				d.cfg.Restart.Interval = d.dur(f[3])
			}
		case "steps":
			for _, s := range strings.Split(v, ",") {
				at, n, _ := strings.Cut(s, ":")
				d.cfg.Steps = append(d.cfg.Steps, Step{At: d.dur(at), Workers: d.int(n)})
			}
		default:
			d.t.Fatalf("config: unknown %q", a)
		}
	}
	c, err := New(d.cfg)
	if err != nil {
		return err.Error()
	}
	d.c, d.now, d.log, d.conns = c, 0, Log{}, 0
	d.conn, d.silent, d.beatAt, d.frames = map[uint32]uint64{}, map[uint32]bool{}, map[uint32]time.Duration{}, map[uint32]uint32{}
	return ""
}

// advance moves time on by dt in ticks, the workers beating.
func (d *driver) advance(dt time.Duration) string {
	var out strings.Builder
	for end := d.now + dt; d.now < end; {
		d.now = min(d.now+d.cfg.Tick, end)
		ids := make([]uint32, 0, len(d.conn))
		for id := range d.conn {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if !d.silent[id] && d.now-d.beatAt[id] >= d.cfg.Heartbeat {
				d.beatAt[id] = d.now
				out.WriteString(d.step(Beat{Conn: d.conn[id], From: id}))
			}
		}
		out.WriteString(d.step(Tick{}))
	}
	return out.String()
}

// step feeds one event and prints its actions, each with the time.
func (d *driver) step(ev Event) string {
	var out strings.Builder
	out.WriteString(d.pending)
	d.pending = ""
	for _, a := range d.c.Step(d.now, d.log, ev) {
		switch a := a.(type) {
		case Bind:
			d.conn[a.ID] = a.Conn
		case Replay:
			if !a.OpenOnly {
				d.log.Done = min(d.log.Done, a.From)
			}
		}
		fmt.Fprintf(&out, "%v: %s\n", d.now, Format(a))
	}
	return out.String()
}

func (d *driver) status() string {
	c := d.c
	var b strings.Builder
	fmt.Fprintf(&b, "epoch %d live %v placed %v target %d idle %v failures %d\n", c.Epoch(), c.Live(), c.Placed(), c.target, c.Idle(), c.Failures())
	if c.Restarts() > 0 || c.LostGroups() > 0 || c.Failed() != nil {
		fmt.Fprintf(&b, "restarts %d lost-groups %d failed %v\n", c.Restarts(), c.LostGroups(), c.Failed())
	}
	if c.owners != nil {
		fmt.Fprintf(&b, "owners %s\n", formatOwners(c.owners))
	}
	id, cut, state := c.Checkpoint()
	fmt.Fprintf(&b, "checkpoint %d cut %d groups %d\n", id, cut, len(state))
	for _, m := range c.Migrations() {
		fmt.Fprintf(&b, "migration epoch %d %s %d→%d moves %d complete %v planner %.0f ms\n", m.Epoch, m.Reason, m.From, m.To, m.Moves, m.Complete, m.PlannerMS)
	}
	for _, s := range c.CheckpointLog() {
		fmt.Fprintf(&b, "checkpoint-log %d %s cut %d complete %v duration %.0f ms pause %.0f ms drain %.0f ms", s.ID, s.Mode, s.Cut, s.Complete, s.DurationMS, s.PauseMS, s.DrainMS)
		if s.Reason != "" {
			b.WriteString(": " + s.Reason)
		}
		b.WriteByte('\n')
	}
	for _, r := range c.Restores() {
		fmt.Fprintf(&b, "restore epoch %d checkpoint %d cut %d groups %d replayed %d\n", r.Epoch, r.Checkpoint, r.Cut, r.Groups, r.Replayed)
	}
	return b.String()
}

func (d *driver) worker(s string) uint32 {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "w"), 10, 32)
	if err != nil {
		d.t.Fatalf("bad worker %q", s)
	}
	return uint32(n)
}

func (d *driver) int(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		d.t.Fatalf("bad number %q", s)
	}
	return n
}

func (d *driver) dur(s string) time.Duration {
	x, err := time.ParseDuration(s)
	if err != nil {
		d.t.Fatalf("bad duration %q", s)
	}
	return x
}

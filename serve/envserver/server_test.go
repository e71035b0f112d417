package envserver

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"streamscale/env"
	"streamscale/traces"
)

var update = flag.Bool("update", false, "rewrite the golden trajectories in testdata/")

// localConfig builds the config the server builds for req (defaults as
// CreateRequest documents them).
func localConfig(t testing.TB, profile, scenario string, placement uint64, steps int) env.Config {
	t.Helper()
	tr, err := traces.Load("taxi-train", traces.Options{RateMult: 1, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := env.EdgeConfig(profile, placement, tr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Physics, err = env.ScenarioPhysics(scenario); err != nil {
		t.Fatal(err)
	}
	cfg.Steps = steps
	return cfg
}

// actionAt is the deterministic test policy: choice (t·3 + k) mod 5.
func actionAt(t, n int) []int64 {
	a := make([]int64, n)
	for k := range a {
		a[k] = int64((t*3 + k) % 5)
	}
	return a
}

func toInts(a []int64) []int {
	out := make([]int, len(a))
	for i, x := range a {
		out[i] = int(x)
	}
	return out
}

func obs32(o env.Observation) []float32 {
	var out []float32
	for _, x := range o.Flatten(nil) {
		out = append(out, float32(x))
	}
	return out
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestMatchesLocalEnv: a remote env gives, step by step, the float32 of
// the local env's observation and its reward bit for bit, on both
// profiles and both scenarios, through truncation.
func TestMatchesLocalEnv(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	c := newClient(ts)
	for _, profile := range env.Profiles() {
		for _, scenario := range env.Scenarios() {
			t.Run(profile+"/"+scenario, func(t *testing.T) {
				const steps = 25
				cr, err := c.create(CreateRequest{Profile: profile, Scenario: scenario, Steps: steps})
				if err != nil {
					t.Fatal(err)
				}
				local, err := env.New(localConfig(t, profile, scenario, 42, steps))
				if err != nil {
					t.Fatal(err)
				}
				secs, err := c.reset(cr.ID, 7)
				if err != nil {
					t.Fatal(err)
				}
				lo, _, _ := local.Reset(7)
				if got := secs[0].Float32s(nil); !sameBits(got, obs32(lo)) {
					t.Fatalf("reset observation differs from the local env's")
				}
				n := len(cr.Spaces.Nvec)
				for step := range steps {
					a := actionAt(step, n)
					secs, err := c.step(cr.ID, a)
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					sr, err := local.Step(env.Action{Choices: toInts(a)})
					if err != nil {
						t.Fatal(err)
					}
					if !sameBits(secs[0].Float32s(nil), obs32(sr.Obs)) {
						t.Fatalf("step %d: observation differs", step)
					}
					if r := secs[1].Float64s(nil)[0]; math.Float64bits(r) != math.Float64bits(sr.Reward) {
						t.Fatalf("step %d: reward %v, local %v", step, r, sr.Reward)
					}
					if f := secs[2].Bools(nil); f[0] != sr.Terminated || f[1] != sr.Truncated {
						t.Fatalf("step %d: flags %v, local %v %v", step, f, sr.Terminated, sr.Truncated)
					}
					var info map[string]any
					if err := json.Unmarshal(secs[3].Data, &info); err != nil {
						t.Fatalf("step %d: info: %v", step, err)
					}
					if info["p95_ms"] != sr.Info.P95MS && !(info["p95_ms"] == nil && math.IsNaN(sr.Info.P95MS)) {
						t.Fatalf("step %d: p95_ms %v, local %v", step, info["p95_ms"], sr.Info.P95MS)
					}
					if info["reward_total"] != sr.Reward {
						t.Fatalf("step %d: reward_total %v, local %v", step, info["reward_total"], sr.Reward)
					}
				}
				if _, err := c.step(cr.ID, actionAt(0, n)); code(err) != "episode_over" {
					t.Fatalf("step after truncation: %v, want episode_over", err)
				}
				if err := c.close(cr.ID); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestVectorMatchesLocalVec: the vector form equals a local env.VecEnv in
// both autoreset modes across episode ends, final observations included.
func TestVectorMatchesLocalVec(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	c := newClient(ts)
	for _, mode := range []string{"next_step", "same_step"} {
		t.Run(mode, func(t *testing.T) {
			const n, steps = 3, 4
			seeds := []uint64{42, 37}
			cr, err := c.create(CreateRequest{Profile: "etl", NumEnvs: n, PlacementSeeds: seeds, Steps: steps, Autoreset: mode})
			if err != nil {
				t.Fatal(err)
			}
			var cfgs []env.Config
			for i := range n {
				cfgs = append(cfgs, localConfig(t, "etl", "realistic", seeds[i%2], steps))
			}
			m := map[string]env.Autoreset{"next_step": env.NextStep, "same_step": env.SameStep}[mode]
			local, err := env.NewVec(cfgs, m, 1)
			if err != nil {
				t.Fatal(err)
			}
			secs, err := c.reset(cr.ID, 11)
			if err != nil {
				t.Fatal(err)
			}
			lobs, _ := local.Reset(11)
			var want []float32
			for _, o := range lobs {
				want = append(want, obs32(o)...)
			}
			if !sameBits(secs[0].Float32s(nil), want) {
				t.Fatal("vector reset observation differs")
			}
			// Reset infos: env i's is a single env's Reset(VecSeed(11, i, 0)) info.
			nt := len(cr.Spaces.Nvec)
			got := decodeVecInfo(t, *cr.InfoLayout, secs[1:], n, nt)
			for i := range n {
				single, err := env.New(cfgs[i])
				if err != nil {
					t.Fatal(err)
				}
				_, info, _ := single.Reset(env.VecSeed(11, i, 0))
				got.check(t, "reset", i, &info, 0, 0)
				if info.Step != -1 || info.NextOfferedRate <= 0 {
					t.Fatalf("reset info of env %d: step %d, next_offered_rate %v", i, info.Step, info.NextOfferedRate)
				}
			}
			ended := 0
			for step := range 3 * steps {
				var a []int64
				acts := make([]env.Action, n)
				for i := range n {
					ai := actionAt(step+i, nt)
					a = append(a, ai...)
					acts[i] = env.Action{Choices: toInts(ai)}
				}
				secs, err := c.step(cr.ID, a)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				res, err := local.Step(acts)
				if err != nil {
					t.Fatal(err)
				}
				want, wantFinal := []float32{}, []float32{}
				for i := range n {
					want = append(want, obs32(res.Obs[i])...)
					if res.Terminated[i] || res.Truncated[i] {
						wantFinal = append(wantFinal, obs32(res.FinalObs[i])...)
						ended++
					}
				}
				if !sameBits(secs[0].Float32s(nil), want) {
					t.Fatalf("step %d: observations differ", step)
				}
				if !slices.Equal(secs[1].Float64s(nil), res.Rewards) {
					t.Fatalf("step %d: rewards %v, local %v", step, secs[1].Float64s(nil), res.Rewards)
				}
				flags := secs[2].Bools(nil)
				if !slices.Equal(flags[:n], res.Terminated) || !slices.Equal(flags[n:2*n], res.Truncated) {
					t.Fatalf("step %d: flags %v", step, flags)
				}
				if !sameBits(secs[3].Float32s(nil), wantFinal) {
					t.Fatalf("step %d: final observations differ", step)
				}
				got := decodeVecInfo(t, *cr.InfoLayout, secs[4:], n, nt)
				for i := range n {
					r, l := 0.0, 0
					if res.Terminated[i] || res.Truncated[i] {
						r, l = res.EpisodeReturn[i], res.EpisodeLength[i]
					}
					got.check(t, fmt.Sprintf("step %d", step), i, &res.Infos[i], r, l)
				}
			}
			if ended == 0 {
				t.Fatal("no episode ended; the test checks nothing of autoreset")
			}
		})
	}
}

// TestRefusedChangesNothing: bad bodies, wrong shapes, out-of-range
// choices, unknown ids and calls after close get their error code, and
// the env then continues exactly as a local env that never saw them.
func TestRefusedChangesNothing(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	c := newClient(ts)
	cr, err := c.create(CreateRequest{Profile: "pred"})
	if err != nil {
		t.Fatal(err)
	}
	n := len(cr.Spaces.Nvec)
	if _, err := c.step(cr.ID, actionAt(0, n)); code(err) != "not_reset" {
		t.Fatalf("step before reset: %v", err)
	}
	if _, err := c.reset(cr.ID, 3); err != nil {
		t.Fatal(err)
	}
	local, _ := env.New(localConfig(t, "pred", "realistic", 42, 0))
	local.Reset(3)
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"empty", nil, "bad_action"},
		{"short", actionsBody(actionAt(0, n-1)), "bad_action"},
		{"long", actionsBody(actionAt(0, n+1)), "body_too_large"},
		{"negative", actionsBody(append(actionAt(0, n-1), -1)), "bad_action"},
		{"five", actionsBody(append(actionAt(0, n-1), 5)), "bad_action"},
		{"float", AppendFloat32s(nil, make([]float32, 2*n)), "bad_action"},
		{"truncated", actionsBody(actionAt(0, n))[:8*n], "malformed_body"},
		{"two sections", append(AppendBools(nil, nil), actionsBody(actionAt(0, n))...)[:headerLen+8*n], "malformed_body"},
	} {
		if _, err := c.stepRaw(cr.ID, tc.body); code(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	for step := range 5 {
		a := actionAt(step, n)
		secs, err := c.step(cr.ID, a)
		if err != nil {
			t.Fatal(err)
		}
		sr, _ := local.Step(env.Action{Choices: toInts(a)})
		if !sameBits(secs[0].Float32s(nil), obs32(sr.Obs)) || secs[1].Float64s(nil)[0] != sr.Reward {
			t.Fatalf("step %d after refused requests differs from the local env", step)
		}
	}
	if _, err := c.step(cr.ID+100, actionAt(0, n)); code(err) != "unknown_env" {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := c.do("POST", "/v1/envs/x/step", "", nil); code(err) != "unknown_env" {
		t.Errorf("non-numeric id: %v", err)
	}
	if err := c.close(cr.ID); err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() error{
		func() error { _, err := c.step(cr.ID, actionAt(0, n)); return err },
		func() error { _, err := c.reset(cr.ID, 1); return err },
		func() error { return c.close(cr.ID) },
	} {
		if err := call(); code(err) != "closed" {
			t.Errorf("after close: %v, want closed", err)
		}
	}
}

// vecInfo is a vector response's infos decoded by its layout.
type vecInfo struct {
	f       map[string][]float64
	i       map[string][]int64
	b       map[string][]bool
	applied []float64 // env-major
	tasks   int
}

func decodeVecInfo(t *testing.T, l InfoLayout, secs []Section, n, tasks int) vecInfo {
	t.Helper()
	if len(secs) != infoSections || len(l.PerTask) != 1 {
		t.Fatalf("%d info sections, layout %+v", len(secs), l)
	}
	for k, want := range []struct {
		kind byte
		n    int
	}{{KindFloat64, len(l.Float64) * n}, {KindInt64, len(l.Int64) * n}, {KindBool, len(l.Bool) * n}, {KindFloat64, n * tasks}} {
		if secs[k].Kind != want.kind || secs[k].N != want.n {
			t.Fatalf("info section %d: kind %q of %d, want %q of %d", k, secs[k].Kind, secs[k].N, want.kind, want.n)
		}
	}
	v := vecInfo{f: map[string][]float64{}, i: map[string][]int64{}, b: map[string][]bool{}, applied: secs[3].Float64s(nil), tasks: tasks}
	fs, is, bs := secs[0].Float64s(nil), secs[1].Int64s(nil), secs[2].Bools(nil)
	for r, name := range l.Float64 {
		v.f[name] = fs[r*n : (r+1)*n]
	}
	for r, name := range l.Int64 {
		v.i[name] = is[r*n : (r+1)*n]
	}
	for r, name := range l.Bool {
		v.b[name] = bs[r*n : (r+1)*n]
	}
	return v
}

// check compares env k's infos with the env's Info and episode figures.
func (v vecInfo) check(t *testing.T, at string, k int, want *env.Info, epReturn float64, epLen int) {
	t.Helper()
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p95_ms", v.f["p95_ms"][k], want.P95MS},
		{"next_offered_rate", v.f["next_offered_rate"][k], want.NextOfferedRate},
		{"total_cpu", v.f["total_cpu"][k], want.TotalCPU},
		{"reward_total", v.f["reward_total"][k], want.Reward.Total},
		{"reward_slo", v.f["reward_slo"][k], want.Reward.SLO},
		{"episode_return", v.f["episode_return"][k], epReturn},
	} {
		if !same(c.got, c.want) {
			t.Fatalf("%s env %d: %s %v, want %v", at, k, c.name, c.got, c.want)
		}
	}
	for _, f := range infoFloats {
		if !same(v.f[f.name][k], f.val(want)) {
			t.Fatalf("%s env %d: %s %v, want %v", at, k, f.name, v.f[f.name][k], f.val(want))
		}
	}
	if v.i["step"][k] != int64(want.Step) || uint64(v.i["seed"][k]) != want.Seed || v.i["episode_length"][k] != int64(epLen) {
		t.Fatalf("%s env %d: step %d seed %d episode_length %d, want %d %d %d", at, k,
			v.i["step"][k], uint64(v.i["seed"][k]), v.i["episode_length"][k], want.Step, want.Seed, epLen)
	}
	if v.b["completed"][k] != want.Completed || v.b["violated"][k] != want.Violated {
		t.Fatalf("%s env %d: completed %v violated %v, want %v %v", at, k, v.b["completed"][k], v.b["violated"][k], want.Completed, want.Violated)
	}
	if got := v.applied[k*v.tasks : (k+1)*v.tasks]; !slices.Equal(got, want.Applied) {
		t.Fatalf("%s env %d: applied %v, want %v", at, k, got, want.Applied)
	}
}

func actionsBody(a []int64) []byte { return AppendInt64s(nil, a) }

// TestCreateRefused: bad create requests are refused with bad_request.
func TestCreateRefused(t *testing.T) {
	s, ts := newTestServer(t, Config{MaxJSONBytes: 1024})
	c := newClient(ts)
	for _, body := range []string{
		`{"profile":"nope"}`, `{"profile":"etl","trace":"/etc/passwd.csv"}`, `{"profile":"etl","scenario":"x"}`,
		`{"profile":"etl","rate_mult":-1}`, `{"profile":"etl","steps":-1}`, `{"profile":"etl","steps":100000}`,
		`{"profile":"etl","num_envs":-2}`, `{"profile":"etl","autoreset":"next_step"}`,
		`{"profile":"etl","num_envs":2,"autoreset":"later"}`, `{"profile":"etl","unknown":1}`,
		`{"profile":"etl","placement_seed":1,"placement_seeds":[2]}`, `{"profile":"etl"} {}`, `[`,
	} {
		if _, err := c.do("POST", "/v1/envs", "application/json", []byte(body)); code(err) != "bad_request" {
			t.Errorf("%s: %v, want bad_request", body, err)
		}
	}
	big := fmt.Appendf(nil, `{"profile":"etl","trace":"%0*d"}`, 2000, 0)
	if _, err := c.do("POST", "/v1/envs", "application/json", big); code(err) != "body_too_large" {
		t.Errorf("large body: %v", err)
	}
	if st := s.Stats(); st.Instances != 0 || st.Envs != 0 {
		t.Errorf("refused creates left %+v", st)
	}
}

// TestLimits: the per-connection and total limits count vector envs,
// closing frees room, and a second connection has its own allowance.
func TestLimits(t *testing.T) {
	s, ts := newTestServer(t, Config{MaxEnvs: 5, MaxEnvsPerConn: 3})
	a, b := newClient(ts), newClient(ts)
	v, err := a.create(CreateRequest{Profile: "etl", NumEnvs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.create(CreateRequest{Profile: "etl", NumEnvs: 2}); code(err) != "too_many_envs" {
		t.Fatalf("over the per-connection limit: %v", err)
	}
	if _, err := a.create(CreateRequest{Profile: "etl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.create(CreateRequest{Profile: "etl", NumEnvs: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.create(CreateRequest{Profile: "etl"}); code(err) != "too_many_envs" {
		t.Fatalf("over the total limit: %v", err)
	}
	if err := a.close(v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.create(CreateRequest{Profile: "etl"}); err != nil {
		t.Fatalf("after close: %v", err)
	}
	if st := s.Stats(); st.Envs != 4 || st.Instances != 3 {
		t.Fatalf("stats %+v, want 4 envs in 3 instances", st)
	}
}

// TestIdleTimeout: Sweep frees an instance untouched for longer than the
// idle timeout, and only such; its id then reports closed.
func TestIdleTimeout(t *testing.T) {
	now := time.Unix(1000, 0)
	s, ts := newTestServer(t, Config{IdleTimeout: time.Minute, Now: func() time.Time { return now }})
	c := newClient(ts)
	old, err := c.create(CreateRequest{Profile: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Second)
	fresh, err := c.create(CreateRequest{Profile: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(20 * time.Second)
	if n := s.Sweep(now); n != 1 {
		t.Fatalf("swept %d, want 1", n)
	}
	if _, err := c.reset(old.ID, 1); code(err) != "closed" {
		t.Fatalf("idle env: %v, want closed", err)
	}
	if _, err := c.reset(fresh.ID, 1); err != nil {
		t.Fatalf("fresh env: %v", err)
	}
	if st := s.Stats(); st.Envs != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// golden is a recorded trajectory: the Python client's tests compare the
// server against it (python/streamscale_env/tests).
type golden struct {
	Profile       string     `json:"profile"`
	Trace         string     `json:"trace"`
	TraceSource   string     `json:"trace_source"`
	Scenario      string     `json:"scenario"`
	PlacementSeed uint64     `json:"placement_seed"`
	Seed          uint64     `json:"seed"`
	Actions       [][]int64  `json:"actions"`
	ObsBits       [][]uint32 `json:"obs_bits"`    // float32 bits; [0] is the reset observation
	RewardBits    []uint64   `json:"reward_bits"` // float64 bits
	Truncated     []bool     `json:"truncated"`
}

// TestGoldenTrajectory holds the local env against
// testdata/trajectory_<profile>.json (rewrite with -update).
func TestGoldenTrajectory(t *testing.T) {
	for _, profile := range env.Profiles() {
		t.Run(profile, func(t *testing.T) {
			cfg := localConfig(t, profile, "realistic", 42, 0)
			src := traceSource(cfg.Workload.(*traces.Trace))
			e, err := env.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			g := golden{Profile: profile, Trace: "taxi-train", TraceSource: src, Scenario: "realistic", PlacementSeed: 42, Seed: 7}
			o, _, _ := e.Reset(g.Seed)
			g.ObsBits = append(g.ObsBits, bits32(obs32(o)))
			for step := range 12 {
				a := actionAt(step, e.NumTasks())
				sr, err := e.Step(env.Action{Choices: toInts(a)})
				if err != nil {
					t.Fatal(err)
				}
				g.Actions = append(g.Actions, a)
				g.ObsBits = append(g.ObsBits, bits32(obs32(sr.Obs)))
				g.RewardBits = append(g.RewardBits, math.Float64bits(sr.Reward))
				g.Truncated = append(g.Truncated, sr.Truncated)
			}
			got, _ := json.Marshal(g)
			path := filepath.Join("testdata", "trajectory_"+profile+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var w golden
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if w.TraceSource != src {
				t.Skipf("trace source %q here, %q in the golden file", src, w.TraceSource)
			}
			if string(got)+"\n" != string(want) {
				t.Fatalf("%s differs from the env's trajectory (rerun with -update if env changed on purpose)", path)
			}
		})
	}
}

func bits32(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// TestContentLength: JSON responses too carry a Content-Length, also
// above net/http's chunking threshold (2 KiB), so a client's framing is
// always one header and one body read.
func TestContentLength(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"x": strings.Repeat("y", 10_000)})
	}))
	defer big.Close()
	for _, tc := range []struct{ method, url, body string }{
		{"POST", ts.URL + "/v1/envs", `{"profile":"etl","num_envs":2}`},
		{"POST", ts.URL + "/v1/envs", `{"profile":"nope"}`},
		{"GET", ts.URL + "/v1/healthz", ""},
		{"GET", big.URL, ""},
	} {
		req, err := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ContentLength != n || len(resp.TransferEncoding) > 0 {
			t.Errorf("%s %s: Content-Length %d, transfer encoding %v, body %d bytes", tc.method, tc.url, resp.ContentLength, resp.TransferEncoding, n)
		}
	}
}

// TestServerScenario: with a server scenario (serve env -scenario), a
// request naming none or its name gets it, one naming a preset gets the
// preset, anything else (a path included) is refused, and a demand for
// another profile is refused.
func TestServerScenario(t *testing.T) {
	sc, err := env.ParseScenario([]byte(`{"version":1,"base":"paper","physics":{"service_cv":0.5},"demand":{"profile":"pred","cpu_scale":0.01,"tasks":[{"task":"SenMLParse","cpu_us_per_event":3}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	sc.Name = "cal/scenario.json"
	_, ts := newTestServer(t, Config{Scenario: &sc})
	c := newClient(ts)
	for _, tc := range []struct{ req, want string }{{"", sc.Name}, {sc.Name, sc.Name}, {"paper", "paper"}} {
		r, err := c.create(CreateRequest{Profile: "pred", Scenario: tc.req})
		if err != nil || r.Scenario != tc.want {
			t.Errorf("scenario %q: %+v, %v; want %q", tc.req, r.Scenario, err, tc.want)
		}
	}
	for _, req := range []CreateRequest{{Profile: "pred", Scenario: "other.json"}, {Profile: "etl"}} {
		if _, err := c.create(req); code(err) != "bad_request" {
			t.Errorf("%+v: %v, want bad_request", req, err)
		}
	}
}

package envserver

import (
	"testing"

	"streamscale/env"
)

// benchEnvs is the vector size of the speed goal (16 ETL envs).
const benchEnvs = 16

// BenchmarkRemoteVecStep steps a vector of 16 ETL envs (realistic
// physics, training trace) over loopback HTTP/1.1, one request per vector
// step; env-steps/s is the figure to hold against the 20,000/s goal.
// BenchmarkVecStepLocal is the same stepping without the server, the
// floor the remote path adds to.
func BenchmarkRemoteVecStep(b *testing.B) {
	_, ts := newTestServer(b, Config{})
	c := newClient(ts)
	cr, err := c.create(CreateRequest{Profile: "etl", NumEnvs: benchEnvs, PlacementSeeds: []uint64{42, 37}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.reset(cr.ID, 1); err != nil {
		b.Fatal(err)
	}
	body := AppendInt64s(nil, make([]int64, benchEnvs*len(cr.Spaces.Nvec)))
	for i := range benchEnvs * len(cr.Spaces.Nvec) {
		body[headerLen+8*i] = byte(i % 5)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.stepRaw(cr.ID, body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchEnvs*b.N)/b.Elapsed().Seconds(), "env-steps/s")
}

func benchVec(b *testing.B) (*env.VecEnv, []env.Action) {
	var cfgs []env.Config
	for i := range benchEnvs {
		cfgs = append(cfgs, localConfig(b, "etl", "realistic", []uint64{42, 37}[i%2], 0))
	}
	v, err := env.NewVec(cfgs, env.NextStep, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.Reset(1); err != nil {
		b.Fatal(err)
	}
	acts := make([]env.Action, benchEnvs)
	for i := range acts {
		acts[i] = env.Action{Choices: toInts(actionAt(i, v.Env(0).NumTasks()))}
	}
	return v, acts
}

// BenchmarkVecStepLocal steps the benchmark's vector in process (the
// simulation cost of one vector step, no encoding, no HTTP).
func BenchmarkVecStepLocal(b *testing.B) {
	v, acts := benchVec(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Step(acts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchEnvs*b.N)/b.Elapsed().Seconds(), "env-steps/s")
}

// BenchmarkEncodeVecStep encodes one vector step's response (observations,
// rewards, flags, binary infos) for 16 envs.
func BenchmarkEncodeVecStep(b *testing.B) {
	v, acts := benchVec(b)
	res, err := v.Step(acts)
	if err != nil {
		b.Fatal(err)
	}
	ended := make([]bool, benchEnvs)
	nt := v.Env(0).NumTasks()
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		out = appendVecStep(out[:0], res, ended, v.Spaces().FlatSize(), nt)
	}
	b.SetBytes(int64(len(out)))
}

package envserver

import (
	"testing"
)

// BenchmarkRemoteVecStep steps a vector of 16 ETL envs (realistic
// physics, training trace) over loopback HTTP/1.1, one request per vector
// step; env-steps/s is the figure to hold against the 20,000/s goal.
func BenchmarkRemoteVecStep(b *testing.B) {
	const n = 16
	_, ts := newTestServer(b, Config{})
	c := newClient(ts)
	cr, err := c.create(CreateRequest{Profile: "etl", NumEnvs: n, PlacementSeeds: []uint64{42, 37}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.reset(cr.ID, 1); err != nil {
		b.Fatal(err)
	}
	body := AppendInt64s(nil, make([]int64, n*len(cr.Spaces.Nvec)))
	for i := range n * len(cr.Spaces.Nvec) {
		body[headerLen+8*i] = byte(i % 5)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.stepRaw(cr.ID, body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "env-steps/s")
}

package env_test

import (
	"encoding/json"
	"fmt"

	"streamscale/env"
)

// constant is a workload of a fixed rate.
type constant struct {
	rate  float64
	steps int
}

func (c constant) Len() int         { return c.steps }
func (c constant) Rate(int) float64 { return c.rate }

// Run the PRED profile on placement 7 at 3,000 messages/s: at the initial
// 500 millicores per task DecisionTreeClassify serves 2,500 events/s, its
// queue grows by 500 a second and the p95 passes the 180 ms SLO; one +500
// step doubles its capacity, the backlog drains within the next second and
// the SLO is met again. The reward: at step 0 the risk term charges a p95
// above the 144 ms safe latency; while violating, R_SLO and the rise in
// p95 dominate; at step 3 raising all six tasks when only one showed
// pressure costs R_reconf; step 4 earns the recovery bonus; from then on
// 6,000 mc (500 mc per task above the minimum) keeps R_resource at 1.125.
func Example() {
	cfg, err := env.EdgeConfig("pred", 7, constant{rate: 3000, steps: 8})
	if err != nil {
		panic(err)
	}
	e, err := env.New(cfg)
	if err != nil {
		panic(err)
	}
	e.Reset(1)
	hold := []int{2, 2, 2, 2, 2, 2}
	up := []int{4, 4, 4, 4, 4, 4}
	for s := 0; s < 8; s++ {
		act := hold
		if s == 3 {
			act = up
		}
		sr, _ := e.Step(env.Action{Choices: act})
		r := sr.Reward
		info := sr.Info
		fmt.Printf("step %d cpu %5.0f p95 %7.1f ms violated %-5v reward %+.2f\n", s, info.TotalCPU, info.P95MS, info.Violated, r)
	}
	// Output:
	// step 0 cpu  3000 p95   173.8 ms violated false reward +1.66
	// step 1 cpu  3000 p95   339.7 ms violated true  reward -5.47
	// step 2 cpu  3000 p95   506.4 ms violated true  reward -5.93
	// step 3 cpu  6000 p95   480.3 ms violated true  reward -5.21
	// step 4 cpu  6000 p95    40.4 ms violated false reward +2.12
	// step 5 cpu  6000 p95    40.4 ms violated false reward +1.62
	// step 6 cpu  6000 p95    40.4 ms violated false reward +1.62
	// step 7 cpu  6000 p95    40.4 ms violated false reward +1.62
}

// The spaces are plain data: a trainer or an HTTP client reads them as JSON.
func ExampleSpaces() {
	cfg, _ := env.EdgeConfig("etl", 7, constant{rate: 1000, steps: 10})
	e, _ := env.New(cfg)
	sp := e.Spaces()
	b, _ := json.Marshal(struct {
		Keys   []string `json:"keys"`
		Task   []int    `json:"task_shape"`
		Server []int    `json:"server_shape"`
		App    []int    `json:"app_shape"`
		Nvec   []int    `json:"nvec"`
	}{sp.Keys, sp.Observation["task"].Shape, sp.Observation["server"].Shape, sp.Observation["app"].Shape, sp.Nvec})
	fmt.Println(string(b))
	fmt.Println(sp.FlatSize(), sp.DeltaMillicores)
	// Output:
	// {"keys":["app","server","task"],"task_shape":[9,15],"server_shape":[7,5],"app_shape":[11],"nvec":[5,5,5,5,5,5,5,5,5]}
	// 181 [-500 -50 0 50 500]
}

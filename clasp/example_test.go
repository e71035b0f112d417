package clasp_test

import (
	"fmt"

	"streamscale/clasp"
)

// A first plan for word count at 300 sentences/s (2,700 words/s): CLASP
// places count (the sink) first, filling worker 0 and part of worker 1, then
// split from where count ended; split's requests beyond count's share on
// worker 1 go to worker 0, one remote destination per sending worker.
func ExampleCLASP_Plan() {
	p, err := clasp.New(clasp.DefaultConfig())
	if err != nil {
		panic(err)
	}
	plan, err := p.Plan(0, clasp.Observation{App: clasp.WC(), InputRate: 300, Bandwidth: 125e6})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Reason, "| order", plan.Explain.Order, "| P", plan.Parallelism)
	for _, w := range plan.Workers {
		fmt.Printf("worker %d: split %.3f count %.3f load %.0f µs/s (%d remote destinations)\n",
			w.ID, w.Share[0], w.Share[1], w.Load.Total(), w.Load.RemoteDests)
	}
	// Output:
	// initial placement | order [1 0] | P [1 1]
	// worker 0: split 0.000 count 0.675 load 850000 µs/s (0 remote destinations)
	// worker 1: split 0.458 count 0.325 load 850000 µs/s (1 remote destinations)
	// worker 2: split 0.542 count 0.000 load 712570 µs/s (2 remote destinations)
}

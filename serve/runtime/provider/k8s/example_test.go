package k8s_test

import (
	"fmt"

	"k8s.io/client-go/kubernetes/fake"

	"streamscale/serve/runtime/provider/k8s"
)

// Worker i's address is its StatefulSet pod's stable DNS name under the
// headless Service.
func ExampleProvider_Address() {
	p, err := k8s.New(fake.NewClientset(), "team-a", "streamscale-worker", "streamscale-worker", 7001)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Address(0))
	fmt.Println(p.Address(11))
	// Output:
	// streamscale-worker-0.streamscale-worker.team-a.svc.cluster.local:7001
	// streamscale-worker-11.streamscale-worker.team-a.svc.cluster.local:7001
}

func ExampleOrdinal() {
	for _, pod := range []string{"streamscale-worker-3", "streamscale-worker-03", "streamscale-worker-canary"} {
		ord, ok := k8s.Ordinal("streamscale-worker", pod)
		fmt.Println(pod, ord, ok)
	}
	// Output:
	// streamscale-worker-3 3 true
	// streamscale-worker-03 0 false
	// streamscale-worker-canary 0 false
}

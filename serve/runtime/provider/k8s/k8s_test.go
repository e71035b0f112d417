package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// newProvider returns a provider of c's StatefulSet polling every
// millisecond.
func newProvider(t *testing.T, c *cluster) *Provider {
	t.Helper()
	p, err := New(c.cs, testNS, c.name, DefaultService, DefaultWorkerPort, PollInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// addrs is the expected addresses of the given ordinals.
func addrs(ords ...int) []string {
	out := make([]string, len(ords))
	for i, o := range ords {
		out[i] = fmt.Sprintf("streamscale-worker-%d.streamscale-worker.%s.svc.cluster.local:7001", o, testNS)
	}
	return out
}

func ords(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestNewValidates(t *testing.T) {
	cs := fake.NewClientset()
	for _, tc := range []struct {
		ns, set, svc string
		port         int
		opts         []Option
		want         string // error substring; "" = valid
	}{
		{"team-a", "w", "w", 7001, nil, ""},
		{"team-a", "w", "w", 1, []Option{ClusterDomain("example.org"), PollInterval(time.Second), CloseTimeout(time.Second)}, ""},
		{"", "w", "w", 7001, nil, `namespace ""`},
		{"Team-A", "w", "w", 7001, nil, `namespace "Team-A"`},
		{"team-a", "", "w", 7001, nil, `statefulset name ""`},
		{"team-a", "w.x", "w", 7001, nil, `statefulset name "w.x"`},
		{"team-a", "w", "1w", 7001, nil, `headless service name "1w"`},
		{"team-a", "w", "w_x", 7001, nil, `headless service name "w_x"`},
		{"team-a", "w", "w", 0, nil, "worker port 0, want 1..65535"},
		{"team-a", "w", "w", 65536, nil, "worker port 65536"},
		{"team-a", "w", "w", 7001, []Option{PollInterval(0)}, "poll interval 0s, want > 0"},
		{"team-a", "w", "w", 7001, []Option{CloseTimeout(-time.Second)}, "close timeout -1s, want > 0"},
		{"team-a", "w", "w", 7001, []Option{ClusterDomain("Bad Domain")}, `cluster domain "Bad Domain"`},
	} {
		p, err := New(cs, tc.ns, tc.set, tc.svc, tc.port, tc.opts...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("New(%q, %q, %q, %d): %v", tc.ns, tc.set, tc.svc, tc.port, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "k8s: ")):
			t.Errorf("New(%q, %q, %q, %d) = %v, want error containing %q", tc.ns, tc.set, tc.svc, tc.port, err, tc.want)
		case tc.want != "" && p != nil:
			t.Errorf("New returned a provider with an error")
		}
	}
	if _, err := New(nil, "a", "b", "c", 1); err == nil {
		t.Errorf("New with a nil client succeeded")
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("New made API requests: %v", cs.Actions())
	}
	p, err := New(cs, "team-a", "w", "h", 9, ClusterDomain("example.org"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Address(12), "w-12.h.team-a.svc.example.org:9"; got != want {
		t.Errorf("Address(12) = %q, want %q", got, want)
	}
}

// TestScaleUpDown: Scale sets the replica count through the scale
// subresource and returns the stable addresses; Workers agrees; the pods
// follow.
func TestScaleUpDown(t *testing.T) {
	c := newCluster(t, 0, auto)
	p := newProvider(t, c)
	ctx := t.Context()
	for _, n := range []int{3, 5, 1, 4, 4, 0, 2} {
		got, err := p.Scale(ctx, n)
		if err != nil {
			t.Fatalf("Scale(%d): %v", n, err)
		}
		if want := addrs(ords(n)...); !slices.Equal(got, want) {
			t.Fatalf("Scale(%d) = %v, want %v", n, got, want)
		}
		if r := c.replicas(); r != int32(n) {
			t.Fatalf("after Scale(%d) the StatefulSet has %d replicas", n, r)
		}
		if pods := c.pods(); len(pods) != n {
			t.Fatalf("after Scale(%d) %d pods exist", n, len(pods))
		}
		w, err := p.Workers(ctx)
		if err != nil {
			t.Fatalf("Workers after Scale(%d): %v", n, err)
		}
		if !slices.Equal(w, got) {
			t.Fatalf("Workers after Scale(%d) = %v, want %v", n, w, got)
		}
	}
	// Scale went through the subresource only: never an update of the
	// StatefulSet itself.
	for _, a := range c.cs.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() != "scale" {
			t.Errorf("Scale updated the StatefulSet directly: %v", a)
		}
	}
	// Scaling to the current count sends no update.
	before := countVerb(c.cs.Actions(), "update")
	if _, err := p.Scale(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if after := countVerb(c.cs.Actions(), "update"); after != before {
		t.Errorf("Scale to the current count sent %d updates", after-before)
	}
}

func countVerb(as []k8stesting.Action, verb string) int {
	n := 0
	for _, a := range as {
		if a.GetVerb() == verb {
			n++
		}
	}
	return n
}

// TestScaleWaitsForTheController: Scale returns only once the controller
// has observed the change and the pods are ready, polling the status.
func TestScaleWaitsForTheController(t *testing.T) {
	c := newCluster(t, 3, lagging)
	c.lag, c.observeAt = 6, 3
	p := newProvider(t, c)
	// Scale-down: until the controller has finished, the status still says
	// 3 ready replicas (≥ 1): first stale (an older generation), then
	// observed but with the 2 removed pods still there. Scale must accept
	// neither.
	got, err := p.Scale(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, addrs(0)) {
		t.Fatalf("Scale(1) = %v", got)
	}
	if c.reads < c.lag {
		t.Errorf("Scale returned after %d status reads, before the controller ran (read %d)", c.reads, c.lag)
	}
	if len(c.pods()) != 1 {
		t.Errorf("Scale(1) returned with %d pods", len(c.pods()))
	}
	// Scale-up likewise: observed, 3 pods exist, but only 1 is ready.
	if got, err = p.Scale(t.Context(), 3); err != nil || !slices.Equal(got, addrs(0, 1, 2)) {
		t.Fatalf("Scale(3) = %v, %v", got, err)
	}
	if c.reads < c.lag || len(c.pods()) != 3 {
		t.Errorf("Scale(3) returned after %d reads with %d pods", c.reads, len(c.pods()))
	}
	// Someone else scaled to 1 and the controller has not seen it: the
	// status of the older generation says 3 of 3 ready, which Scale(3)
	// must not take for an answer about its own request.
	c.mu.Lock()
	sts := c.sts()
	one := int32(1)
	sts.Spec.Replicas, sts.Generation = &one, sts.Generation+1
	c.put(sts)
	c.mu.Unlock()
	c.observeAt = 0
	if got, err = p.Scale(t.Context(), 3); err != nil || !slices.Equal(got, addrs(0, 1, 2)) {
		t.Fatalf("Scale(3) = %v, %v", got, err)
	}
	if c.reads < c.lag {
		t.Errorf("Scale(3) accepted the status of an older generation after %d reads", c.reads)
	}
}

// TestScaleContextCancelled: when the workers never become ready, Scale
// ends with the context's error, saying how far it got; the new count
// stays set.
func TestScaleContextCancelled(t *testing.T) {
	c := newCluster(t, 1, stuck)
	p := newProvider(t, c)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c.onRead = func(reads int) {
		if reads == 5 {
			cancel()
		}
	}
	got, err := p.Scale(ctx, 3)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Scale = %v, %v; want context.Canceled", got, err)
	}
	for _, s := range []string{"team-a/streamscale-worker", "waiting for 3 workers", "1 of 3 ready, 1 exist"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if c.replicas() != 3 {
		t.Errorf("replicas %d after the cancelled Scale, want 3 (the request was made)", c.replicas())
	}
	// A context already done makes no update at all.
	done, cancel2 := context.WithCancel(t.Context())
	cancel2()
	if _, err := p.Scale(done, 2); err == nil {
		t.Errorf("Scale with a done context succeeded")
	}
	if c.replicas() != 3 {
		t.Errorf("Scale with a done context changed replicas to %d", c.replicas())
	}
	// With a deadline instead of a cancel.
	c.onRead = nil
	dl, cancel3 := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel3()
	if _, err := p.Scale(dl, 4); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Scale past its deadline = %v, want DeadlineExceeded", err)
	}
}

// TestScaleRetries: a lost write race (conflict) is retried with a fresh
// read; a transient API error while waiting is retried at the next poll.
func TestScaleRetries(t *testing.T) {
	c := newCluster(t, 0, lagging)
	c.conflicts = 2
	c.onRead = func(reads int) {
		if c.pending && reads == 1 {
			c.transient = 1
		}
	}
	p := newProvider(t, c)
	got, err := p.Scale(t.Context(), 2)
	if err != nil || !slices.Equal(got, addrs(0, 1)) {
		t.Fatalf("Scale(2) = %v, %v", got, err)
	}
	if c.conflicts != 0 || c.transient != 0 {
		t.Errorf("injected failures left: %d conflicts, %d transient", c.conflicts, c.transient)
	}
	if n := countVerb(c.cs.Actions(), "update"); n != 3 {
		t.Errorf("%d scale updates, want 3 (2 conflicts, 1 success)", n)
	}
	if c.replicas() != 2 || len(c.pods()) != 2 {
		t.Errorf("replicas %d, pods %d after Scale(2)", c.replicas(), len(c.pods()))
	}
	// A non-transient error while waiting ends the wait at once.
	c.onRead = func(reads int) {
		if c.pending && reads == 1 {
			c.transient = -1
		}
	}
	c.cs.PrependReactor("get", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if c.transient < 0 {
			return true, nil, apierrors.NewForbidden(stsGVR.GroupResource(), c.name, errors.New("rbac"))
		}
		return false, nil, nil
	})
	if _, err := p.Scale(t.Context(), 3); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "get statefulset team-a/streamscale-worker") {
		t.Errorf("Scale with a forbidden read = %v", err)
	}
}

// TestNotFound: a missing StatefulSet is named in the error of Scale and
// Workers and is errors.Is-able as NotFound.
func TestNotFound(t *testing.T) {
	c := newCluster(t, 0, auto)
	p, err := New(c.cs, testNS, "nope", DefaultService, DefaultWorkerPort)
	if err != nil {
		t.Fatal(err)
	}
	_, errS := p.Scale(t.Context(), 1)
	_, errW := p.Workers(t.Context())
	for _, err := range []error{errS, errW} {
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "k8s: statefulset team-a/nope not found") {
			t.Errorf("error %v, want NotFound naming team-a/nope", err)
		}
	}
	p2, _ := New(c.cs, "elsewhere", c.name, DefaultService, DefaultWorkerPort)
	if _, err := p2.Scale(t.Context(), 1); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "elsewhere/streamscale-worker") {
		t.Errorf("other namespace: %v", err)
	}
	if p.Close() != nil || p2.Close() != nil {
		t.Errorf("Close of a provider that never scaled failed")
	}
}

// TestBadRequests: bad n and a StatefulSet governed by another Service are
// refused with a clear error and change nothing.
func TestBadRequests(t *testing.T) {
	c := newCluster(t, 2, auto)
	p := newProvider(t, c)
	for _, tc := range []struct {
		n    int
		want string
	}{
		{-1, "scale to -1 workers, want n ≥ 0"},
		{1 << 40, "want at most 2147483647"},
	} {
		if _, err := p.Scale(t.Context(), tc.n); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Scale(%d) = %v, want %q", tc.n, err, tc.want)
		}
	}
	long, err := New(c.cs, testNS, strings.Repeat("w", 60), DefaultService, DefaultWorkerPort)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Scale(t.Context(), 1000); err == nil || !strings.Contains(err.Error(), `pod name "`+strings.Repeat("w", 60)+`-999" is longer than 63 characters`) {
		t.Errorf("Scale to an overlong pod name: %v", err)
	}
	if len(c.cs.Actions()) != 0 {
		t.Errorf("bad Scale calls made requests: %v", c.cs.Actions())
	}
	q, _ := New(c.cs, testNS, c.name, "other", DefaultWorkerPort)
	_, errS := q.Scale(t.Context(), 3)
	_, errW := q.Workers(t.Context())
	for _, err := range []error{errS, errW} {
		if err == nil || !strings.Contains(err.Error(), `governed by service "streamscale-worker", not "other"`) {
			t.Errorf("wrong service: %v", err)
		}
	}
	if c.replicas() != 2 {
		t.Errorf("refused requests changed replicas to %d", c.replicas())
	}
}

// TestWorkersOrdinalOrder: Workers returns the ready pods in ordinal order
// whatever order the list comes in, ignoring pods whose names do not parse
// and pods that are not ready, running, or that are being deleted.
func TestWorkersOrdinalOrder(t *testing.T) {
	c := newCluster(t, 12, auto)
	sts := c.sts()
	labelled := func(name string) *corev1.Pod {
		p := readyPod(sts, 0)
		p.Name = name
		return p
	}
	for _, name := range []string{"streamscale-worker-01", "streamscale-worker-x", "streamscale-worker-", "streamscale-worker-canary-0", "other-3", "streamscale-worker-+5", "streamscale-worker-99999999999"} {
		c.addPod(labelled(name))
	}
	unrelated := labelled("streamscale-worker-40")
	unrelated.Labels = map[string]string{"app": "else"}
	c.addPod(unrelated)
	mark := func(ord int, f func(p *corev1.Pod)) {
		p := c.pods()[ord].DeepCopy()
		f(p)
		if err := c.cs.Tracker().Update(podGVR, p, testNS); err != nil {
			t.Fatal(err)
		}
	}
	mark(3, func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse })
	mark(5, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	mark(7, func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now })
	mark(8, func(p *corev1.Pod) { p.Status.Conditions = nil })
	want := addrs(0, 1, 2, 4, 6, 9, 10, 11)
	p := newProvider(t, c)
	for name, order := range map[string]func(a, b *corev1.Pod) int{
		"by name":       func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) },
		"by name, desc": func(a, b *corev1.Pod) int { return strings.Compare(b.Name, a.Name) },
		"by name's tail": func(a, b *corev1.Pod) int {
			return strings.Compare(a.Name[len(a.Name)-1:]+a.Name, b.Name[len(b.Name)-1:]+b.Name)
		},
		"tracker's order": nil,
	} {
		c.podOrder = order
		got, err := p.Workers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Workers = %v, want %v", name, got, want)
		}
	}
}

// TestClose: Close stops the workers this provider started (back to the
// count it found), only if it scaled up, once; afterwards every method
// returns ErrClosed.
func TestClose(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial int32
		scales  []int
		want    int32 // replicas after Close
	}{
		{"scaled up from 0", 0, []int{3}, 0},
		{"scaled up then down", 0, []int{3, 1}, 0},
		{"scaled up from 2", 2, []int{4}, 2},
		{"only scaled down", 2, []int{1}, 1},
		{"never scaled", 2, nil, 2},
		{"down then up past the start", 2, []int{1, 5}, 2},
		{"down then up below the start", 3, []int{1, 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.initial, auto)
			p := newProvider(t, c)
			for _, n := range tc.scales {
				if _, err := p.Scale(t.Context(), n); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if got := c.replicas(); got != tc.want {
				t.Errorf("replicas after Close %d, want %d", got, tc.want)
			}
			n := len(c.cs.Actions())
			if err := p.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := p.Scale(t.Context(), 1); !errors.Is(err, ErrClosed) {
				t.Errorf("Scale after Close: %v", err)
			}
			if _, err := p.Workers(t.Context()); !errors.Is(err, ErrClosed) {
				t.Errorf("Workers after Close: %v", err)
			}
			if len(c.cs.Actions()) != n {
				t.Errorf("closed provider made requests: %v", c.cs.Actions()[n:])
			}
		})
	}
}

// TestCloseReportsFailure: a failing scale-down is reported, naming the
// StatefulSet and the target count.
func TestCloseReportsFailure(t *testing.T) {
	c := newCluster(t, 0, auto)
	p := newProvider(t, c)
	if _, err := p.Scale(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	c.cs.PrependReactor("update", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(stsGVR.GroupResource(), c.name, errors.New("rbac"))
	})
	err := p.Close()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "scale statefulset team-a/streamscale-worker back to 0") {
		t.Errorf("Close = %v", err)
	}
}

// TestRoleCoversProviderRequests replays every request the provider makes
// (Scale up and down, Workers, Close) against the shipped Role.
func TestRoleCoversProviderRequests(t *testing.T) {
	role := loadManifests(t).roles[0]
	c := newCluster(t, 0, lagging)
	p := newProvider(t, c)
	for _, n := range []int{3, 1} {
		if _, err := p.Scale(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Workers(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range c.cs.Actions() {
		r := request{verb: a.GetVerb(), group: a.GetResource().Group, resource: a.GetResource().Resource, subresource: a.GetSubresource()}
		if a.GetNamespace() != testNS {
			t.Errorf("request outside the provider's namespace: %v", a)
		}
		switch a := a.(type) {
		case k8stesting.GetAction:
			r.name = a.GetName()
		case k8stesting.UpdateAction:
			if sc, ok := a.GetObject().(*autoscalingv1.Scale); ok {
				r.name = sc.Name
			}
		}
		seen[fmt.Sprintf("%+v", r)] = true
		if !allows(role, r) {
			t.Errorf("the provider sent %+v, which role %s does not allow", r, role.Name)
		}
	}
	if len(seen) != 4 {
		t.Errorf("requests seen: %v, want 4 kinds (get statefulset, get and update scale, list pods)", seen)
	}
}

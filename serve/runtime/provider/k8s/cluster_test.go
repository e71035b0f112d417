package k8s

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The fake clientset runs no controller and does not implement the scale
// subresource (its tracker would hand back the StatefulSet itself), so
// cluster stands in for the API server's scale subresource and for the
// StatefulSet controller, deterministically: no goroutines and no clock.

// controller says when the simulated StatefulSet controller acts on a
// change of spec.replicas.
type controller int

const (
	auto    controller = iota // at once, inside the scale update
	lagging                   // at the lag-th status read after the change
	stuck                     // never
)

var (
	stsGVR = appsv1.SchemeGroupVersion.WithResource("statefulsets")
	podGVR = corev1.SchemeGroupVersion.WithResource("pods")
)

const testNS = "team-a"

type cluster struct {
	t    *testing.T
	cs   *fake.Clientset
	name string // the StatefulSet
	ctl  controller
	lag  int
	// observeAt > 0 makes the lagging controller observe the change
	// earlier, at that status read, without finishing it: the new pods
	// exist but are not ready, or the removed ones still exist.
	observeAt int

	mu        sync.Mutex
	rv        int
	pending   bool // spec changed, controller not yet run
	reads     int  // status reads since the last spec change
	conflicts int  // scale updates to lose to another writer
	transient int  // status reads to fail with an internal error
	onRead    func(reads int)
	podOrder  func(a, b *corev1.Pod) int // order of pod lists; nil: tracker's
}

// newCluster returns a fake cluster holding the shipped workers'
// StatefulSet (deploy/k8s/workers.yaml) in testNS with `replicas` ready
// pods.
func newCluster(t *testing.T, replicas int32, ctl controller) *cluster {
	t.Helper()
	sts := loadManifests(t).statefulSets[0].DeepCopy()
	sts.Namespace = testNS
	sts.Spec.Replicas = &replicas
	sts.Generation = 1
	c := &cluster{t: t, name: sts.Name, ctl: ctl, lag: 3}
	c.cs = fake.NewClientset()
	if err := c.cs.Tracker().Add(sts); err != nil {
		t.Fatal(err)
	}
	c.reconcile()
	c.cs.PrependReactor("get", "statefulsets", c.get)
	c.cs.PrependReactor("update", "statefulsets", c.update)
	c.cs.PrependReactor("list", "pods", c.list)
	return c
}

func (c *cluster) sts() *appsv1.StatefulSet {
	o, err := c.cs.Tracker().Get(stsGVR, testNS, c.name)
	if err != nil {
		c.t.Errorf("cluster: %v", err)
		return nil
	}
	return o.(*appsv1.StatefulSet).DeepCopy()
}

func (c *cluster) put(sts *appsv1.StatefulSet) {
	c.rv++
	sts.ResourceVersion = strconv.Itoa(c.rv)
	if err := c.cs.Tracker().Update(stsGVR, sts, testNS); err != nil {
		c.t.Errorf("cluster: %v", err)
	}
}

// pods returns the StatefulSet's pods by ordinal.
func (c *cluster) pods() map[int]*corev1.Pod {
	o, err := c.cs.Tracker().List(podGVR, corev1.SchemeGroupVersion.WithKind("Pod"), testNS)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[int]*corev1.Pod{}
	for i, p := range o.(*corev1.PodList).Items {
		if ord, ok := Ordinal(c.name, p.Name); ok {
			out[ord] = &o.(*corev1.PodList).Items[i]
		}
	}
	return out
}

// reconcile does what the StatefulSet controller would: pods 0..n-1 exist
// and are ready, no others, and the status says so.
func (c *cluster) reconcile() {
	sts := c.sts()
	n := int(*sts.Spec.Replicas)
	have := c.pods()
	for i := range n {
		if have[i] == nil {
			c.addPod(readyPod(sts, i))
		}
	}
	for ord, p := range have {
		if ord >= n {
			if err := c.cs.Tracker().Delete(podGVR, testNS, p.Name); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: sts.Generation,
		Replicas:           int32(n),
		ReadyReplicas:      int32(n),
		AvailableReplicas:  int32(n),
		CurrentReplicas:    int32(n),
	}
	c.put(sts)
	c.pending = false
}

func (c *cluster) addPod(p *corev1.Pod) {
	if err := c.cs.Tracker().Add(p); err != nil {
		c.t.Fatal(err)
	}
}

// readyPod is the StatefulSet's pod with ordinal i, running and ready.
func readyPod(sts *appsv1.StatefulSet, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%d", sts.Name, i),
			Namespace: sts.Namespace,
			Labels:    sts.Spec.Template.Labels,
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func scaleOf(sts *appsv1.StatefulSet) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: sts.Name, Namespace: sts.Namespace, ResourceVersion: sts.ResourceVersion},
		Spec:       autoscalingv1.ScaleSpec{Replicas: *sts.Spec.Replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: sts.Status.Replicas},
	}
}

// get serves the scale subresource and counts status reads, running the
// lagging controller and the injected failures.
func (c *cluster) get(action k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := action.(k8stesting.GetAction)
	if a.GetNamespace() != testNS || a.GetName() != c.name {
		return false, nil, nil // the tracker answers: not found
	}
	if a.GetSubresource() == "scale" {
		return true, scaleOf(c.sts()), nil
	}
	c.reads++
	if c.onRead != nil {
		c.onRead(c.reads)
	}
	if c.transient > 0 {
		c.transient--
		return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd leader changed"))
	}
	if c.pending && c.ctl == lagging && c.reads == c.observeAt {
		sts := c.sts()
		sts.Status.ObservedGeneration = sts.Generation
		if n := *sts.Spec.Replicas; n > sts.Status.Replicas {
			sts.Status.Replicas = n
		}
		c.put(sts)
	}
	if c.pending && c.ctl == lagging && c.reads >= c.lag {
		c.reconcile()
	}
	return false, nil, nil
}

// update serves the scale subresource with optimistic concurrency.
func (c *cluster) update(action k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := action.(k8stesting.UpdateAction)
	if a.GetSubresource() != "scale" {
		return false, nil, nil
	}
	sc := a.GetObject().(*autoscalingv1.Scale)
	sts := c.sts()
	if c.conflicts > 0 { // another writer got there first
		c.conflicts--
		c.put(sts)
		sts = c.sts()
	}
	if sc.ResourceVersion != sts.ResourceVersion {
		return true, nil, apierrors.NewConflict(stsGVR.GroupResource(), sc.Name, fmt.Errorf("resource version %s, stored %s", sc.ResourceVersion, sts.ResourceVersion))
	}
	if sc.Spec.Replicas != *sts.Spec.Replicas {
		sts.Spec.Replicas = &sc.Spec.Replicas
		sts.Generation++
		c.put(sts)
		c.pending, c.reads = true, 0
		if c.ctl == auto {
			c.reconcile()
		}
	}
	return true, scaleOf(c.sts()), nil
}

// list serves pod lists in the order podOrder imposes.
func (c *cluster) list(action k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.podOrder == nil {
		return false, nil, nil
	}
	o, err := c.cs.Tracker().List(podGVR, corev1.SchemeGroupVersion.WithKind("Pod"), action.GetNamespace())
	if err != nil {
		return true, nil, err
	}
	l := o.(*corev1.PodList)
	slices.SortFunc(l.Items, func(a, b corev1.Pod) int { return c.podOrder(&a, &b) })
	return true, l, nil
}

// replicas returns the stored spec.replicas.
func (c *cluster) replicas() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.sts().Spec.Replicas
}

package k8s

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"streamscale/serve/runtime/provider"
)

// Defaults of the options.
const (
	// DefaultPollInterval is how often Scale reads the StatefulSet's status
	// while it waits for the workers.
	DefaultPollInterval = time.Second
	// DefaultClusterDomain is the cluster's DNS domain (kubelet's
	// --cluster-domain), the last part of every worker address.
	DefaultClusterDomain = "cluster.local"
	// DefaultCloseTimeout bounds the one scale-down request Close sends.
	DefaultCloseTimeout = 30 * time.Second
)

// ErrClosed is returned by every method of a closed Provider.
var ErrClosed = errors.New("k8s: provider closed")

// maxLabel is the longest DNS label (RFC 1123), hence the longest pod name
// that can be a host name.
const maxLabel = 63

// Option configures a Provider.
type Option func(*Provider) error

// PollInterval sets how often Scale reads the StatefulSet's status while it
// waits (> 0; default DefaultPollInterval).
func PollInterval(d time.Duration) Option {
	return func(p *Provider) error {
		if d <= 0 {
			return fmt.Errorf("k8s: poll interval %v, want > 0", d)
		}
		p.poll = d
		return nil
	}
}

// ClusterDomain sets the cluster's DNS domain used in worker addresses (a
// DNS subdomain; default DefaultClusterDomain).
func ClusterDomain(domain string) Option {
	return func(p *Provider) error {
		if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
			return fmt.Errorf("k8s: cluster domain %q: %s", domain, strings.Join(errs, "; "))
		}
		p.domain = domain
		return nil
	}
}

// CloseTimeout bounds the scale-down request that Close sends (> 0; default
// DefaultCloseTimeout).
func CloseTimeout(d time.Duration) Option {
	return func(p *Provider) error {
		if d <= 0 {
			return fmt.Errorf("k8s: close timeout %v, want > 0", d)
		}
		p.closeTimeout = d
		return nil
	}
}

// Provider runs the runtime's workers as the pods of a StatefulSet (see the
// package documentation).
type Provider struct {
	client       kubernetes.Interface
	namespace    string
	set          string // the StatefulSet's name
	service      string // the headless Service's name
	port         int
	domain       string
	poll         time.Duration
	closeTimeout time.Duration

	mu     sync.Mutex
	closed bool
	based  bool  // base holds the replica count found at the first Scale
	base   int32 // replicas before this provider changed anything
	raised bool  // some Scale set the count above base
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider for the StatefulSet named statefulSet, governed by
// the headless Service headlessService, in namespace; workers listen on port.
// It validates the names (namespace and StatefulSet: DNS-1123 labels;
// Service: a DNS-1035 label) and the port, and makes no request: a missing
// StatefulSet is reported by the first Scale or Workers.
func New(client kubernetes.Interface, namespace, statefulSet, headlessService string, port int, opts ...Option) (*Provider, error) {
	if client == nil {
		return nil, errors.New("k8s: nil client")
	}
	for _, c := range []struct {
		what, name string
		check      func(string) []string
	}{
		{"namespace", namespace, validation.IsDNS1123Label},
		{"statefulset name", statefulSet, validation.IsDNS1123Label},
		{"headless service name", headlessService, validation.IsDNS1035Label},
	} {
		if errs := c.check(c.name); len(errs) > 0 {
			return nil, fmt.Errorf("k8s: %s %q: %s", c.what, c.name, strings.Join(errs, "; "))
		}
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("k8s: worker port %d, want 1..65535", port)
	}
	p := &Provider{
		client:       client,
		namespace:    namespace,
		set:          statefulSet,
		service:      headlessService,
		port:         port,
		domain:       DefaultClusterDomain,
		poll:         DefaultPollInterval,
		closeTimeout: DefaultCloseTimeout,
	}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Address returns worker i's address:
// "<statefulset>-i.<service>.<namespace>.svc.<domain>:<port>".
func (p *Provider) Address(i int) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc.%s:%d", p.set, i, p.service, p.namespace, p.domain, p.port)
}

// Scale makes the StatefulSet run exactly n ready workers and returns their
// addresses in ordinal order. It returns when the controller reports n pods,
// all ready, or with the context's error (naming how many were ready) when
// ctx ends first; the replica count it set stays set.
func (p *Provider) Scale(ctx context.Context, n int) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("k8s: scale to %d workers, want n ≥ 0", n)
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("k8s: scale to %d workers, want at most %d", n, math.MaxInt32)
	}
	if n > 0 {
		if last := fmt.Sprintf("%s-%d", p.set, n-1); len(last) > maxLabel {
			return nil, fmt.Errorf("k8s: scale to %d workers: pod name %q is longer than %d characters", n, last, maxLabel)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("k8s: scale statefulset %s/%s to %d: %w", p.namespace, p.set, n, err)
	}
	if _, err := p.get(ctx); err != nil {
		return nil, err
	}
	want := int32(n)
	sets := p.client.AppsV1().StatefulSets(p.namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := sets.GetScale(ctx, p.set, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !p.based {
			p.base, p.based = sc.Spec.Replicas, true
		}
		if sc.Spec.Replicas == want {
			return nil
		}
		sc.Spec.Replicas = want
		_, err = sets.UpdateScale(ctx, p.set, sc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("k8s: scale statefulset %s/%s to %d: %w", p.namespace, p.set, n, err)
	}
	if p.based && want > p.base {
		p.raised = true
	}
	if err := p.wait(ctx, want); err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = p.Address(i)
	}
	return addrs, nil
}

// wait polls the StatefulSet until its controller has observed the current
// spec and reports exactly n pods, all ready. Transient API errors (time-outs,
// throttling, 5xx) are retried at the next poll; others end the wait.
func (p *Provider) wait(ctx context.Context, n int32) error {
	tick := time.NewTicker(p.poll)
	defer tick.Stop()
	var last error
	state := "no status read"
	for {
		sts, err := p.get(ctx)
		switch {
		case err == nil:
			st := sts.Status
			if st.ObservedGeneration >= sts.Generation && st.Replicas == n && st.ReadyReplicas >= n {
				return nil
			}
			last = nil
			state = fmt.Sprintf("%d of %d ready, %d exist, generation %d observed %d",
				st.ReadyReplicas, n, st.Replicas, sts.Generation, st.ObservedGeneration)
		case transient(err):
			last = err
		default:
			return err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("k8s: statefulset %s/%s: waiting for %d workers (%s; last error: %v): %w",
					p.namespace, p.set, n, state, last, ctx.Err())
			}
			return fmt.Errorf("k8s: statefulset %s/%s: waiting for %d workers (%s): %w",
				p.namespace, p.set, n, state, ctx.Err())
		case <-tick.C:
		}
	}
}

// transient reports whether an API error is worth retrying.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// get reads the StatefulSet and checks that the headless Service governs it
// (otherwise the worker addresses would not resolve).
func (p *Provider) get(ctx context.Context) (*appsv1.StatefulSet, error) {
	sts, err := p.client.AppsV1().StatefulSets(p.namespace).Get(ctx, p.set, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("k8s: statefulset %s/%s not found: %w", p.namespace, p.set, err)
		}
		return nil, fmt.Errorf("k8s: get statefulset %s/%s: %w", p.namespace, p.set, err)
	}
	if sts.Spec.ServiceName != p.service {
		return nil, fmt.Errorf("k8s: statefulset %s/%s is governed by service %q, not %q: worker addresses would not resolve",
			p.namespace, p.set, sts.Spec.ServiceName, p.service)
	}
	return sts, nil
}

// Workers returns the addresses of the StatefulSet's ready pods in ordinal
// order. Pods matched by the selector whose names are not
// "<statefulset>-<ordinal>" are ignored.
func (p *Provider) Workers(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	sts, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("k8s: statefulset %s/%s: selector: %w", p.namespace, p.set, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("k8s: statefulset %s/%s has an empty selector, which would match every pod", p.namespace, p.set)
	}
	pods, err := p.client.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("k8s: list pods of statefulset %s/%s: %w", p.namespace, p.set, err)
	}
	var ords []int
	for i := range pods.Items {
		pod := &pods.Items[i]
		if ord, ok := Ordinal(p.set, pod.Name); ok && ready(pod) {
			ords = append(ords, ord)
		}
	}
	slices.Sort(ords)
	addrs := make([]string, len(ords))
	for i, ord := range ords {
		addrs[i] = p.Address(ord)
	}
	return addrs, nil
}

// ready reports whether a pod is running, ready and not being deleted.
func ready(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Ordinal parses a StatefulSet pod's name "<set>-<ordinal>": the ordinal is
// a decimal without sign or leading zeros, at most math.MaxInt32. ok is false
// for any other name.
func Ordinal(set, pod string) (ordinal int, ok bool) {
	digits, found := strings.CutPrefix(pod, set+"-")
	if !found || digits == "" || len(digits) > 10 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(v), true
}

// Close scales the StatefulSet back to the replica count found at the first
// Scale if this provider ever raised it (see the package documentation), and
// closes the provider. Closing twice is a no-op.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if !p.raised {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.closeTimeout)
	defer cancel()
	sets := p.client.AppsV1().StatefulSets(p.namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := sets.GetScale(ctx, p.set, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sc.Spec.Replicas <= p.base {
			return nil
		}
		sc.Spec.Replicas = p.base
		_, err = sets.UpdateScale(ctx, p.set, sc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("k8s: close: scale statefulset %s/%s back to %d: %w", p.namespace, p.set, p.base, err)
	}
	return nil
}

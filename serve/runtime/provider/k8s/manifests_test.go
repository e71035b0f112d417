package k8s

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// manifestDir holds the shipped manifests, relative to this package.
var manifestDir = filepath.Join("..", "..", "..", "..", "deploy", "k8s")

// manifests is every object of deploy/k8s, decoded strictly.
type manifests struct {
	objects      []runtime.Object
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	accounts     []*corev1.ServiceAccount
	roles        []*rbacv1.Role
	bindings     []*rbacv1.RoleBinding
}

// decodeStrict splits a multi-document YAML stream and decodes every
// document with client-go's scheme, refusing unknown and duplicate fields.
// Documents holding only comments are skipped. name prefixes errors.
func decodeStrict(name string, r io.Reader) ([]runtime.Object, error) {
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		objs = append(objs, obj)
	}
}

func onlyComments(doc []byte) bool {
	for line := range strings.Lines(string(doc)) {
		if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", manifestDir, err)
	}
	slices.Sort(files)
	m := &manifests{}
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".yaml" {
			t.Fatalf("%s: deploy/k8s holds only .yaml manifests, found %q", f, ext)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeStrict(filepath.Base(f), bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Fatalf("%s: no objects", f)
		}
		for _, o := range objs {
			m.objects = append(m.objects, o)
			switch o := o.(type) {
			case *appsv1.Deployment:
				m.deployments = append(m.deployments, o)
			case *appsv1.StatefulSet:
				m.statefulSets = append(m.statefulSets, o)
			case *corev1.Service:
				m.services = append(m.services, o)
			case *corev1.ServiceAccount:
				m.accounts = append(m.accounts, o)
			case *rbacv1.Role:
				m.roles = append(m.roles, o)
			case *rbacv1.RoleBinding:
				m.bindings = append(m.bindings, o)
			default:
				t.Fatalf("%s: unexpected object %T", f, o)
			}
		}
	}
	for _, c := range []struct {
		kind string
		n    int
	}{
		{"Deployment", len(m.deployments)}, {"StatefulSet", len(m.statefulSets)}, {"Role", len(m.roles)},
		{"RoleBinding", len(m.bindings)}, {"ServiceAccount", len(m.accounts)}, {"Service", len(m.services) - 1},
	} {
		if c.n != 1 {
			t.Fatalf("manifests: want exactly one %s (two Services), found %d", c.kind, c.n)
		}
	}
	return m
}

// service returns the Service whose selector selects the pod labels.
func (m *manifests) service(t *testing.T, headless bool) *corev1.Service {
	t.Helper()
	for _, s := range m.services {
		if (s.Spec.ClusterIP == corev1.ClusterIPNone) == headless {
			return s
		}
	}
	t.Fatalf("no service with headless=%v", headless)
	return nil
}

// TestManifestsDecodeStrictly: the decoder used on deploy/k8s refuses what
// the API server's strict field validation refuses (so a clean decode of
// the manifests means something).
func TestManifestsDecodeStrictly(t *testing.T) {
	const good = `apiVersion: v1
kind: Service
metadata:
  name: s
spec:
  ports:
    - port: 1
`
	if _, err := decodeStrict("good", strings.NewReader(good)); err != nil {
		t.Fatalf("good manifest: %v", err)
	}
	for name, bad := range map[string]string{
		"unknown field":   strings.Replace(good, "  ports:", "  portz: []\n  ports:", 1),
		"duplicate field": strings.Replace(good, "  name: s", "  name: s\n  name: t", 1),
		"unknown kind":    strings.Replace(good, "kind: Service", "kind: Servce", 1),
		"wrong type":      strings.Replace(good, "port: 1", "port: one", 1),
	} {
		if _, err := decodeStrict(name, strings.NewReader(bad)); err == nil {
			t.Errorf("%s: decoded without error:\n%s", name, bad)
		}
	}
	m := loadManifests(t)
	for _, o := range m.objects {
		acc, err := metaOf(o)
		if err != nil {
			t.Fatal(err)
		}
		if acc.GetNamespace() != "" {
			t.Errorf("%T %s sets namespace %q; the manifests are namespace-agnostic", o, acc.GetName(), acc.GetNamespace())
		}
		if acc.GetLabels()["app.kubernetes.io/name"] != "streamscale" {
			t.Errorf("%T %s lacks label app.kubernetes.io/name=streamscale", o, acc.GetName())
		}
	}
}

func metaOf(o runtime.Object) (metav1.Object, error) {
	acc, ok := o.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", o)
	}
	return acc, nil
}

// argFlags parses a container's args (after the subcommand) as -name=value
// flags, refusing any other form so that the test sees every flag.
func argFlags(t *testing.T, c *corev1.Container, sub string) map[string]string {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("container %s overrides the image's entrypoint: %v", c.Name, c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != sub {
		t.Fatalf("container %s: args %v, want subcommand %q first", c.Name, c.Args, sub)
	}
	out := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(name, "-") || strings.HasPrefix(name, "--") {
			t.Fatalf("container %s: arg %q, want -name=value", c.Name, a)
		}
		if _, dup := out[name[1:]]; dup {
			t.Fatalf("container %s: flag %s twice", c.Name, name)
		}
		out[name[1:]] = value
	}
	return out
}

// containerPort returns the port of the named container port.
func containerPort(t *testing.T, c *corev1.Container, name string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, name)
	return 0
}

// portOf returns the port of a host:port flag value.
func portOf(t *testing.T, what, hostport string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hostport, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s %q: port: %v", what, hostport, err)
	}
	return host, port
}

// targetPort resolves a Service target port against a container.
func targetPort(t *testing.T, c *corev1.Container, tp intstr.IntOrString) int {
	t.Helper()
	if tp.Type == intstr.String {
		return containerPort(t, c, tp.StrVal)
	}
	return tp.IntValue()
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkPod checks what every pod of the runtime needs: security context,
// CPU and memory limits, probes on the health port, the token from the
// Secret, and every $(VAR) in the args defined in env.
func checkPod(t *testing.T, what string, spec *corev1.PodSpec, flags map[string]string) *corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", what, len(spec.Containers))
	}
	c := &spec.Containers[0]
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod securityContext must run as a non-root uid: %+v", what, psc)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("%s: container securityContext must be read-only, without privilege escalation, dropping ALL: %+v", what, sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim, okL := c.Resources.Limits[r]
		req, okR := c.Resources.Requests[r]
		if !okL || !okR || lim.Cmp(req) < 0 || lim.Cmp(resource.MustParse("0")) <= 0 {
			t.Errorf("%s: %s request %v limit %v, want both set, limit ≥ request > 0", what, r, req.String(), lim.String())
		}
	}
	_, health := portOf(t, what+" -health-addr", flags["health-addr"])
	if got := containerPort(t, c, "http"); got != health {
		t.Errorf("%s: container port http %d, -health-addr port %d", what, got, health)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || targetPort(t, c, p.HTTPGet.Port) != health {
			t.Errorf("%s: %s probe %+v, want GET /healthz on the -health-addr port %d", what, name, p, health)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	tok, ok := env["STREAMSCALE_RUNTIME_TOKEN"]
	if !ok || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil ||
		tok.ValueFrom.SecretKeyRef.Name != "streamscale-runtime" || tok.ValueFrom.SecretKeyRef.Key != "token" {
		t.Errorf("%s: STREAMSCALE_RUNTIME_TOKEN %+v, want from secret streamscale-runtime key token", what, tok)
	}
	for _, a := range c.Args {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("%s: arg %q refers to $(%s), which env does not define", what, a, m[1])
			}
		}
	}
	mounts := map[string]bool{}
	for _, v := range spec.Volumes {
		mounts[v.Name] = true
	}
	for _, vm := range c.VolumeMounts {
		if !mounts[vm.Name] {
			t.Errorf("%s: mount %s of no volume", what, vm.Name)
		}
	}
	return c
}

// TestManifestsCrossReferences checks that the objects of deploy/k8s agree
// with one another, with the flags in the containers' args, and with the
// provider's flag defaults.
func TestManifestsCrossReferences(t *testing.T) {
	m := loadManifests(t)
	dep, sts := m.deployments[0], m.statefulSets[0]
	headless, plannerSvc := m.service(t, true), m.service(t, false)

	// Planner: one replica, never two at once, selected by its Service.
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("planner deployment: replicas %v strategy %q, want 1 and Recreate", dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
	selects(t, "planner deployment", dep.Spec.Selector, dep.Spec.Template.Labels)
	if plannerSvc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("planner service type %q, want ClusterIP", plannerSvc.Spec.Type)
	}
	if !labels.SelectorFromSet(plannerSvc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) || len(plannerSvc.Spec.Selector) == 0 {
		t.Errorf("planner service selector %v does not select the planner pods %v", plannerSvc.Spec.Selector, dep.Spec.Template.Labels)
	}
	pflags := argFlags(t, &dep.Spec.Template.Spec.Containers[0], "planner")
	pc := checkPod(t, "planner", &dep.Spec.Template.Spec, pflags)
	_, plannerPort := portOf(t, "planner -addr", pflags["addr"])
	if got := containerPort(t, pc, "runtime"); got != plannerPort {
		t.Errorf("planner: container port runtime %d, -addr port %d", got, plannerPort)
	}
	svcPorts := map[string]corev1.ServicePort{}
	for _, p := range plannerSvc.Spec.Ports {
		svcPorts[p.Name] = p
	}
	if p, ok := svcPorts["runtime"]; !ok || targetPort(t, pc, p.TargetPort) != plannerPort {
		t.Errorf("planner service port runtime %+v, want target %d", p, plannerPort)
	}
	if p, ok := svcPorts["metrics"]; !ok || targetPort(t, pc, p.TargetPort) != containerPort(t, pc, "http") {
		t.Errorf("planner service port metrics %+v, want the health/metrics port", p)
	}

	// Workers: a StatefulSet governed by the headless Service, scaled by
	// the planner (replicas 0), dialling the planner's Service.
	if sts.Spec.ServiceName != headless.Name {
		t.Errorf("statefulset serviceName %q, headless service %q", sts.Spec.ServiceName, headless.Name)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0 {
		t.Errorf("statefulset replicas %v, want 0 (the planner scales it)", sts.Spec.Replicas)
	}
	selects(t, "worker statefulset", sts.Spec.Selector, sts.Spec.Template.Labels)
	if len(headless.Spec.Selector) == 0 || !labels.SelectorFromSet(headless.Spec.Selector).Matches(labels.Set(sts.Spec.Template.Labels)) {
		t.Errorf("headless service selector %v does not select the worker pods %v", headless.Spec.Selector, sts.Spec.Template.Labels)
	}
	if labels.SelectorFromSet(plannerSvc.Spec.Selector).Matches(labels.Set(sts.Spec.Template.Labels)) ||
		labels.SelectorFromSet(headless.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("a service selects the other component's pods")
	}
	if !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless service must publish not-ready addresses (peers resolve workers before they are ready)")
	}
	wflags := argFlags(t, &sts.Spec.Template.Spec.Containers[0], "worker")
	wc := checkPod(t, "worker", &sts.Spec.Template.Spec, wflags)
	if sts.Spec.Template.Spec.AutomountServiceAccountToken == nil || *sts.Spec.Template.Spec.AutomountServiceAccountToken {
		t.Errorf("workers need no API access: automountServiceAccountToken must be false")
	}
	phost, pport := portOf(t, "worker -planner", wflags["planner"])
	if phost != plannerSvc.Name || pport != int(svcPorts["runtime"].Port) {
		t.Errorf("worker -planner %s:%d, planner service %s port %d", phost, pport, plannerSvc.Name, svcPorts["runtime"].Port)
	}
	_, workerPort := portOf(t, "worker -addr", wflags["addr"])
	if got := containerPort(t, wc, "runtime"); got != workerPort {
		t.Errorf("worker: container port runtime %d, -addr port %d", got, workerPort)
	}
	if len(headless.Spec.Ports) != 1 || int(headless.Spec.Ports[0].Port) != workerPort || targetPort(t, wc, headless.Spec.Ports[0].TargetPort) != workerPort {
		t.Errorf("headless service ports %+v, want %d", headless.Spec.Ports, workerPort)
	}

	// The planner's provider flags name this StatefulSet, Service and
	// port, and its addresses are the workers' own -addr.
	var cfg Config
	fs := flag.NewFlagSet("planner", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	var args []string
	for name, v := range pflags {
		if strings.HasPrefix(name, "k8s-") {
			args = append(args, "-"+name+"="+v)
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("planner -k8s-* flags: %v", err)
	}
	if pflags["provider"] != "k8s" {
		t.Errorf("planner -provider=%q, want k8s", pflags["provider"])
	}
	if cfg.StatefulSet != sts.Name || cfg.Service != headless.Name || cfg.Port != workerPort {
		t.Errorf("planner provider flags %+v, want statefulset %s service %s port %d", cfg, sts.Name, headless.Name, workerPort)
	}
	p, err := cfg.New(newCluster(t, 0, auto).cs, "team-a")
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("$(POD_NAME)", sts.Name+"-2", "$(POD_NAMESPACE)", "team-a")
	if got, want := r.Replace(wflags["addr"]), p.Address(2); got != want {
		t.Errorf("worker 2 listens on %s, the provider addresses it as %s", got, want)
	}
	if env := envOf(wc, "POD_NAME"); env == nil || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("worker POD_NAME %+v, want the downward API metadata.name", env)
	}
	if env := envOf(wc, "POD_NAMESPACE"); env == nil || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("worker POD_NAMESPACE %+v, want the downward API metadata.namespace", env)
	}

	// RBAC: the planner runs as the account the binding grants the Role.
	sa, role, rb := m.accounts[0], m.roles[0], m.bindings[0]
	if dep.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("planner runs as %q, service account %q", dep.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("rolebinding roleRef %+v, want Role %s", rb.RoleRef, role.Name)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != rbacv1.ServiceAccountKind || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != "" {
		t.Errorf("rolebinding subjects %+v, want service account %s of the binding's namespace", rb.Subjects, sa.Name)
	}
	for _, req := range []request{
		{"get", "apps", "statefulsets", "", sts.Name},
		{"get", "apps", "statefulsets", "scale", sts.Name},
		{"update", "apps", "statefulsets", "scale", sts.Name},
		{"patch", "apps", "statefulsets", "scale", sts.Name},
		{"list", "", "pods", "", ""},
	} {
		if !allows(role, req) {
			t.Errorf("role %s does not allow %+v", role.Name, req)
		}
	}
	for _, req := range []request{
		{"delete", "apps", "statefulsets", "", sts.Name},
		{"update", "apps", "statefulsets", "scale", "another"},
		{"list", "", "secrets", "", ""},
		{"create", "", "pods", "", ""},
	} {
		if allows(role, req) {
			t.Errorf("role %s allows %+v, more than the provider needs", role.Name, req)
		}
	}
}

func envOf(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// selects checks that a workload's selector is non-empty and selects its
// own pod template.
func selects(t *testing.T, what string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() || !s.Matches(labels.Set(podLabels)) {
		t.Errorf("%s: selector %v (%v) does not select its pods %v", what, sel, err, podLabels)
	}
}

// request is one API request as RBAC sees it.
type request struct {
	verb, group, resource, subresource, name string
}

// allows evaluates a Role's rules the way the RBAC authorizer does
// (apiGroups, resources "res" or "res/sub", verbs, resourceNames; "*"
// wildcards; a rule with resourceNames never matches a request without a
// name, such as list).
func allows(role *rbacv1.Role, r request) bool {
	res := r.resource
	if r.subresource != "" {
		res += "/" + r.subresource
	}
	has := func(xs []string, x string) bool { return slices.Contains(xs, x) || slices.Contains(xs, "*") }
	for _, rule := range role.Rules {
		if !has(rule.APIGroups, r.group) || !has(rule.Resources, res) || !has(rule.Verbs, r.verb) {
			continue
		}
		if len(rule.ResourceNames) == 0 || (r.name != "" && slices.Contains(rule.ResourceNames, r.name)) {
			return true
		}
	}
	return false
}

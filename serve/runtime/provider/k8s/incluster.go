package k8s

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Defaults of Config, matching the manifests in deploy/k8s.
const (
	DefaultStatefulSet = "streamscale-worker"
	DefaultService     = "streamscale-worker"
	DefaultWorkerPort  = 7001
)

// serviceAccountNamespace is where Kubernetes mounts the pod's namespace
// beside its service-account token.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Config selects the StatefulSet of a provider built inside the cluster
// (InCluster). The zero Config is not valid; RegisterFlags sets the
// defaults.
type Config struct {
	// Namespace of the StatefulSet; empty means the planner pod's own
	// namespace, read from its service-account mount. Default empty.
	Namespace string
	// StatefulSet is the workers' StatefulSet. Default DefaultStatefulSet.
	StatefulSet string
	// Service is the headless Service governing it. Default DefaultService.
	Service string
	// Port is the port every worker listens on. Default DefaultWorkerPort.
	Port int
	// PollInterval is how often Scale reads the StatefulSet's status.
	// Default DefaultPollInterval (1 s).
	PollInterval time.Duration
	// ClusterDomain is the cluster's DNS domain. Default
	// DefaultClusterDomain ("cluster.local").
	ClusterDomain string
}

// RegisterFlags defines the -k8s-* flags on fs, with the defaults above,
// writing into c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Namespace, "k8s-namespace", "", "namespace of the workers' StatefulSet (default: the planner pod's own)")
	fs.StringVar(&c.StatefulSet, "k8s-statefulset", DefaultStatefulSet, "the workers' StatefulSet")
	fs.StringVar(&c.Service, "k8s-service", DefaultService, "the headless Service governing the workers' StatefulSet")
	fs.IntVar(&c.Port, "k8s-worker-port", DefaultWorkerPort, "port every worker pod listens on")
	fs.DurationVar(&c.PollInterval, "k8s-poll", DefaultPollInterval, "how often scaling reads the StatefulSet's status")
	fs.StringVar(&c.ClusterDomain, "k8s-cluster-domain", DefaultClusterDomain, "the cluster's DNS domain")
}

// InCluster returns a provider that talks to the API server of the cluster
// the process runs in (rest.InClusterConfig: the pod's service account).
func (c Config) InCluster() (*Provider, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s: in-cluster configuration: %w", err)
	}
	ns := c.Namespace
	if ns == "" {
		b, err := os.ReadFile(serviceAccountNamespace)
		if err != nil {
			return nil, fmt.Errorf("k8s: no -k8s-namespace and cannot read the pod's namespace: %w", err)
		}
		if ns = strings.TrimSpace(string(b)); ns == "" {
			return nil, errors.New("k8s: no -k8s-namespace and the pod's namespace file " + serviceAccountNamespace + " is empty")
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("k8s: client: %w", err)
	}
	return c.New(client, ns)
}

// New returns a provider for the configured StatefulSet in namespace ns
// through client (Config.Namespace is not consulted).
func (c Config) New(client kubernetes.Interface, ns string) (*Provider, error) {
	var opts []Option
	if c.PollInterval != 0 {
		opts = append(opts, PollInterval(c.PollInterval))
	}
	if c.ClusterDomain != "" {
		opts = append(opts, ClusterDomain(c.ClusterDomain))
	}
	return New(client, ns, c.StatefulSet, c.Service, c.Port, opts...)
}

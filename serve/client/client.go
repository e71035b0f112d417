package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"streamscale/env"
)

// Sentinel errors matched by *Error under errors.Is, by status.
var (
	ErrBadRequest         = errors.New("client: bad request")                // 400, 415: not a request of the schema
	ErrInvalidObservation = errors.New("client: invalid observation")        // 422: lengths, bounds
	ErrNotFound           = errors.New("client: not found")                  // 404: unknown policy or route
	ErrTooLarge           = errors.New("client: request too large")          // 413: body or batch over the limit
	ErrUnauthorized       = errors.New("client: unauthorized")               // 401
	ErrUnavailable        = errors.New("client: service unavailable")        // 503: policies not loaded yet
	ErrServer             = errors.New("client: server error")               // other 5xx
	errUnexpected         = errors.New("client: unexpected response status") // anything else
)

// Error is a request the server refused.
type Error struct {
	StatusCode int    // HTTP status
	Message    string // the server's "error"
	Field      string // the server's "field": JSON path of the offending value, may be empty
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("client: %d: %s (field %s)", e.StatusCode, e.Message, e.Field)
	}
	return fmt.Sprintf("client: %d: %s", e.StatusCode, e.Message)
}

// Is matches the sentinel of the status class.
func (e *Error) Is(target error) bool { return target == e.sentinel() }

func (e *Error) sentinel() error {
	switch s := e.StatusCode; {
	case s == http.StatusBadRequest || s == http.StatusUnsupportedMediaType:
		return ErrBadRequest
	case s == http.StatusUnprocessableEntity:
		return ErrInvalidObservation
	case s == http.StatusNotFound:
		return ErrNotFound
	case s == http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case s == http.StatusUnauthorized:
		return ErrUnauthorized
	case s == http.StatusServiceUnavailable:
		return ErrUnavailable
	case s >= 500:
		return ErrServer
	}
	return errUnexpected
}

// Client talks to one server.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080"); hc nil means http.DefaultClient.
func New(baseURL string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not http(s)://host[:port]", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}, nil
}

// Box is one observation key's shape and per-element bounds.
type Box struct {
	Shape []int     `json:"shape"`
	Low   []float64 `json:"low"`
	High  []float64 `json:"high"`
}

// Policy describes a served policy.
type Policy struct {
	Name        string `json:"name"`
	Set         string `json:"set,omitempty"` // policy set of the server's manifest; empty without one
	Version     string `json:"version"`       // hex SHA-256 of the weights
	Profile     string `json:"profile"`
	Env         string `json:"env"`
	Observation struct {
		Keys  []string       `json:"keys"` // flattening order
		Size  int            `json:"size"`
		Boxes map[string]Box `json:"boxes"`
	} `json:"observation"`
	Action struct {
		Nvec              []int     `json:"nvec"`
		DeltaMillicores   []float64 `json:"delta_millicores"`             // per choice index
		TargetUtilization []float64 `json:"target_utilization,omitempty"` // per choice index, in place of the deltas (0 holds)
		Choices           []string  `json:"choices,omitempty"`            // a residual policy's choice names, in place of both
	} `json:"action"`
	// Residual is set for a residual policy: its requests must carry the
	// targets of the base rule Residual.Base (Options.RuleTargets).
	Residual *Residual       `json:"residual,omitempty"`
	Training json.RawMessage `json:"training"` // the artifact card's provenance
}

// Residual describes a residual policy (agents/residual.Info as served):
// the base rule's spec (agents/rulespec), the choices by index, the
// residual features per observation and the allocation bounds
// (millicores) its targets are clipped to.
type Residual struct {
	Base     string   `json:"base"`
	Choices  []string `json:"choices"`
	Features int      `json:"features"`
	MinCPU   float64  `json:"min_cpu"`
	MaxCPU   float64  `json:"max_cpu"`
}

// Options choose how actions are picked.
type Options struct {
	// Sample draws actions from the policy with the "ppo/action" stream
	// seeded by Seed (reproducible); false takes the per-dimension argmax.
	Sample bool
	Seed   uint64
	// Probabilities asks for each dimension's action distribution.
	Probabilities bool
	// RuleTargets, for a residual policy (Policy.Residual), are the base
	// rule's targets for the observation, millicores per task; Act sends
	// them as rule_targets. Nil for any other policy. ActBatch takes none.
	RuleTargets []float64
}

// Result is the policy's answer for one observation.
type Result struct {
	Action []int     `json:"action"` // choice index per task
	Deltas []float64 `json:"deltas"` // millicores per task
	// TargetUtilization is each task's chosen target utilization, in
	// place of Deltas, for a target-utilization action set (0 holds).
	TargetUtilization []float64   `json:"target_utilization,omitempty"`
	Value             float64     `json:"value"`         // critic's value estimate
	Probabilities     [][]float64 `json:"probabilities"` // per task, per choice (when asked)
	Version           string      `json:"version"`       // weights SHA-256 of the policy that answered
	// Choices and Targets are a residual policy's answer, in place of
	// Deltas: the correction per task by name, and the allocation target
	// per task (millicores) to apply.
	Choices []string  `json:"choices,omitempty"`
	Targets []float64 `json:"targets,omitempty"`
}

// Policies lists the served policies.
func (c *Client) Policies(ctx context.Context) ([]Policy, error) {
	var out struct {
		Policies []Policy `json:"policies"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/policies", nil, &out); err != nil {
		return nil, err
	}
	return out.Policies, nil
}

type wireObs struct {
	App    []float64 `json:"app,omitempty"`
	Server []float64 `json:"server,omitempty"`
	Task   []float64 `json:"task,omitempty"`
}

type request struct {
	Observation   *wireObs  `json:"observation,omitempty"`
	Observations  []wireObs `json:"observations,omitempty"`
	Sample        bool      `json:"sample,omitempty"`
	Seed          *uint64   `json:"seed,omitempty"`
	Probabilities bool      `json:"probabilities,omitempty"`
	RuleTargets   []float64 `json:"rule_targets,omitempty"`
}

func (o Options) request() request {
	r := request{Sample: o.Sample, Probabilities: o.Probabilities}
	if o.Sample {
		r.Seed = &o.Seed
	}
	return r
}

// Act asks policy name for the action on obs.
func (c *Client) Act(ctx context.Context, name string, obs env.Observation, opts Options) (Result, error) {
	r := opts.request()
	r.Observation = &wireObs{obs.App, obs.Server, obs.Task}
	r.RuleTargets = opts.RuleTargets
	var out Result
	err := c.do(ctx, http.MethodPost, "/v1/policies/"+url.PathEscape(name)+"/act", r, &out)
	return out, err
}

// ActBatch asks policy name for the actions on every observation, in
// order. Sampled, the seeded stream runs through them in order.
func (c *Client) ActBatch(ctx context.Context, name string, obs []env.Observation, opts Options) ([]Result, error) {
	if opts.RuleTargets != nil {
		return nil, errors.New("client: ActBatch takes no RuleTargets (ask a residual policy one observation at a time with Act)")
	}
	r := opts.request()
	r.Observations = make([]wireObs, len(obs))
	for i, o := range obs {
		r.Observations[i] = wireObs{o.App, o.Server, o.Task}
	}
	var out struct {
		Results []Result `json:"results"`
		Version string   `json:"version"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/policies/"+url.PathEscape(name)+"/act/batch", r, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(obs) {
		return nil, fmt.Errorf("client: %d results for %d observations", len(out.Results), len(obs))
	}
	for i := range out.Results {
		out.Results[i].Version = out.Version
	}
	return out.Results, nil
}

// maxResponse bounds what the client reads of a response.
const maxResponse = 64 << 20

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("client: %s %s: reading response: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{StatusCode: resp.StatusCode}
		var msg struct {
			Error string `json:"error"`
			Field string `json:"field"`
		}
		if json.Unmarshal(b, &msg) == nil && msg.Error != "" {
			e.Message, e.Field = msg.Error, msg.Field
		} else {
			e.Message = strings.TrimSpace(string(b[:min(len(b), 256)]))
		}
		return e
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: %s %s: decoding response: %w", method, path, err)
	}
	return nil
}

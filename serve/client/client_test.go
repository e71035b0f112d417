package client_test

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"streamscale/env"
	"streamscale/ppo/policy"
	"streamscale/serve/api"
	"streamscale/serve/client"
	"streamscale/serve/internal/fixture"
)

func setup(t *testing.T) (*client.Client, *policy.Policy, *policy.Card) {
	t.Helper()
	dir := t.TempDir()
	if _, err := fixture.Write(dir, "etl", "etl", 64, 3); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	p, card, err := policy.Read(os.DirFS(filepath.Join(dir, "etl")), policy.FileName)
	if err != nil {
		t.Fatal(err)
	}
	return c, p, card
}

func TestClient(t *testing.T) {
	c, p, card := setup(t)
	ctx := context.Background()
	pols, err := c.Policies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pols) != 1 || pols[0].Name != "etl" || pols[0].Version != card.WeightsSHA256 || pols[0].Observation.Size != 181 || len(pols[0].Action.Nvec) != 9 {
		t.Fatalf("policies %+v", pols)
	}
	o, err := fixture.Observation("etl")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, 9)
	v, err := p.Act(o.Flatten(nil), true, nil, want)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Act(ctx, "etl", o, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Action, want) || math.Float64bits(r.Value) != math.Float64bits(v) || r.Version != card.WeightsSHA256 || len(r.Deltas) != 9 || r.Probabilities != nil {
		t.Fatalf("act %+v, want %v %v", r, want, v)
	}
	rs, err := c.ActBatch(ctx, "etl", []env.Observation{o, o, o}, client.Options{Sample: true, Seed: 4, Probabilities: true})
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := policy.NewController(p, card.Spaces)
	if err != nil {
		t.Fatal(err)
	}
	ctl.SetDeterministic(false)
	ctl.Reset(4)
	for i, r := range rs {
		a, err := ctl.Act(o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Action, a.Choices) || len(r.Probabilities) != 9 || r.Version != card.WeightsSHA256 {
			t.Fatalf("batch %d: %+v, controller %v", i, r, a.Choices)
		}
	}
}

func TestClientErrors(t *testing.T) {
	c, _, _ := setup(t)
	ctx := context.Background()
	o, err := fixture.Observation("etl")
	if err != nil {
		t.Fatal(err)
	}
	short := o.Clone()
	short.Task = short.Task[1:]
	missing := o.Clone()
	missing.App = nil
	far := o.Clone()
	far.App[0] = 1e6
	many := make([]env.Observation, api.DefaultMaxBatch+1)
	for i := range many {
		many[i] = o
	}
	cases := []struct {
		name   string
		call   func() error
		target error
		status int
		field  string
	}{
		{"unknown policy", func() error { _, err := c.Act(ctx, "nope", o, client.Options{}); return err }, client.ErrNotFound, 404, "name"},
		{"wrong length", func() error { _, err := c.Act(ctx, "etl", short, client.Options{}); return err }, client.ErrInvalidObservation, 422, "observation.task"},
		{"out of bounds", func() error { _, err := c.Act(ctx, "etl", far, client.Options{}); return err }, client.ErrInvalidObservation, 422, "observation.app[0]"},
		{"missing key", func() error { _, err := c.Act(ctx, "etl", missing, client.Options{}); return err }, client.ErrBadRequest, 400, "observation.app"},
		{"batch too large", func() error { _, err := c.ActBatch(ctx, "etl", many, client.Options{}); return err }, client.ErrTooLarge, 413, "observations"},
		{"empty batch", func() error { _, err := c.ActBatch(ctx, "etl", nil, client.Options{}); return err }, client.ErrBadRequest, 400, "observations"},
	}
	for _, tc := range cases {
		err := tc.call()
		var e *client.Error
		if !errors.As(err, &e) || !errors.Is(err, tc.target) || e.StatusCode != tc.status || e.Field != tc.field {
			t.Errorf("%s: %v (%#v), want %v status %d field %q", tc.name, err, e, tc.target, tc.status, tc.field)
		}
	}
	if _, err := client.New("ftp://x", nil); err == nil {
		t.Error("ftp base URL accepted")
	}
}

// TestClientResidual: a residual policy is listed with its base rule; Act
// sends the rule targets and gets the corrected targets back (the
// follow-biased policy's are the rule's); without them the server
// refuses the request naming rule_targets.
func TestClientResidual(t *testing.T) {
	dir := t.TempDir()
	const rule = "threshold:measured:target=0.7:tol=0.1:window=10"
	if _, err := fixture.WriteResidual(dir, "res", "pred", rule, 16, 3, 40); err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c, err := client.New(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pols, err := c.Policies(ctx)
	if err != nil || len(pols) != 1 || pols[0].Residual == nil || pols[0].Residual.Base != rule || len(pols[0].Action.Choices) != 5 {
		t.Fatalf("policies %+v (%v)", pols, err)
	}
	o, err := fixture.Observation("pred")
	if err != nil {
		t.Fatal(err)
	}
	rt := []float64{900, 1000, 1100, 1200, 1300, 1400}
	r, err := c.Act(ctx, "res", o, client.Options{RuleTargets: rt})
	if err != nil || !slices.Equal(r.Targets, rt) || len(r.Choices) != 6 || r.Choices[0] != "follow" {
		t.Fatalf("act %+v (%v)", r, err)
	}
	var e *client.Error
	if _, err := c.Act(ctx, "res", o, client.Options{}); !errors.As(err, &e) || e.StatusCode != 400 || e.Field != "rule_targets" {
		t.Errorf("without rule targets: %v", err)
	}
	if _, err := c.ActBatch(ctx, "res", []env.Observation{o}, client.Options{RuleTargets: rt}); err == nil {
		t.Error("ActBatch took rule targets")
	}
}

package planner

import (
	"context"
	"strings"
	"testing"

	"streamscale/clasp"
	"streamscale/serve/runtime"
)

type noProvider struct{}

func (noProvider) Scale(context.Context, int) ([]string, error) { return nil, nil }
func (noProvider) Workers(context.Context) ([]string, error)    { return nil, nil }
func (noProvider) Close() error                                 { return nil }

// TestPlacerConfig: a controller other than none or clasp needs a
// NewPlacer; with one, any clasp.Planner is accepted.
func TestPlacerConfig(t *testing.T) {
	app, err := runtime.Builtin("wc")
	if err != nil {
		t.Fatal(err)
	}
	base := Config{App: app, Rate: 10, Duration: 1, Workers: 1, Provider: noProvider{}}
	cfg := base
	cfg.Controller = "faasflow"
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "faasflow") {
		t.Fatalf("controller faasflow without NewPlacer: err %v, want an error naming it", err)
	}
	cfg.NewPlacer = func() (clasp.Planner, error) { return clasp.NewFaaSFlow(clasp.DefaultFaaSFlowConfig()) }
	if _, err := New(cfg); err != nil {
		t.Fatalf("controller faasflow with NewPlacer: %v", err)
	}
}

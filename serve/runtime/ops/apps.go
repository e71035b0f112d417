package ops

import (
	"fmt"
	"strings"
	"time"
)

// opFunc is an operator without instance state: it is safe for concurrent
// use because it keeps nothing between calls but the keyed state it is
// given.
type opFunc func(in Record, st State, out Emitter) error

func (f opFunc) Process(in Record, st State, out Emitter) error { return f(in, st, out) }

func spec(name string, stateful bool, f opFunc) Spec {
	return Spec{Name: name, Stateful: stateful, New: func() Operator { return f }}
}

// opErr is the error of an operator on a bad record.
func opErr(app, op string, err error) error { return fmt.Errorf("ops: %s/%s: %w", app, op, err) }

// apps are the applications AppByName knows, in AppNames' order.
var apps = []struct {
	name string
	mk   func() App
}{
	{"pred", PRED}, {"etl", ETL}, {"wc", WC}, {"sd", SD}, {"aa", AA}, {"pl", PL}, {"nwm", NWM},
	{"syn", func() App { return SYN(DefaultSYNWork) }},
}

// AppNames lists the applications AppByName knows.
func AppNames() []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.name
	}
	return out
}

// AppByName returns the named application (case-insensitive).
func AppByName(name string) (App, error) {
	for _, a := range apps {
		if strings.EqualFold(a.name, name) {
			return a.mk(), nil
		}
	}
	return App{}, fmt.Errorf("ops: unknown app %q (want one of %s)", name, strings.Join(AppNames(), ", "))
}

// Successors returns, for each operator of a, the indices of its
// successors in edge order.
func (a App) Successors() [][]int {
	s := make([][]int, len(a.Operators))
	for _, e := range a.Edges {
		s[e[0]] = append(s[e[0]], e[1])
	}
	return s
}

// synDuration clamps SYN's work.
func synDuration(d time.Duration) time.Duration { return min(max(d, 0), time.Second) }

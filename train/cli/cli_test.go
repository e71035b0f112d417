package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"streamscale/internal/command"
	"streamscale/ppo"
)

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"-workers", "3"}, "train: -workers 3, want 0, 1 or 2"},
		{[]string{"-gogc", "0"}, "train: -gogc 0, want ≥ 1"},
		{[]string{"-steps", "-5"}, "train: -steps -5, want ≥ 0"},
		{[]string{"-env", "atari"}, `train: -env "atari", want streamscale or cartpole`},
		{[]string{"-env", "cartpole", "-profile", "etl"}, "train: -profile applies only to -env streamscale"},
		{[]string{"-env", "cartpole", "-scenario", "paper"}, "train: -scenario applies only to -env streamscale"},
		{[]string{"-scenario", "lab"}, `train: -scenario: env: scenario "lab" is neither a preset (realistic or paper) nor a readable scenario file`},
		{[]string{"-select", "best"}, `train: -select "best", want best-dev or last`},
		{[]string{"-train-traces", "taxi"}, `train: -train-traces: simvec: training trace "taxi" is an evaluation trace`},
		{[]string{"-env", "cartpole", "-train-traces", "taxi-train"}, "train: -randomize, -train-placements, -train-traces, -action-deltas, -action-utilization and -reward-span apply only to -env streamscale"},
		{[]string{"-action-deltas", "-200,-50,5,50,500"}, "train: -action-deltas: env: action deltas [-200 -50 5 50 500]: the middle choice is 5, want 0 (hold)"},
		{[]string{"-env", "cartpole", "-action-deltas", "-200,-50,0,50,500"}, "-action-utilization and -reward-span apply only to -env streamscale"},
		{[]string{"-env", "cartpole", "-action-utilization", "0,0.9,0.7,0.5,0.3"}, "-action-utilization and -reward-span apply only to -env streamscale"},
		{[]string{"-action-utilization", "0,0.9,0.7,0.5"}, "train: -action-utilization: env: action utilizations \"0,0.9,0.7,0.5\": 4 values, want 5"},
		{[]string{"-action-utilization", "0,0.9,0.7,0.5,0.01"}, "action utilization 4 is 0.01, want 0 (hold) or in [0.05, 10]"},
		{[]string{"-action-utilization", "0,0.9,0.7,0.9,0.3"}, "action utilizations [0 0.9 0.7 0.9 0.3] repeat 0.9"},
		{[]string{"-action-utilization", "0,0,0,0,0"}, "every choice holds"},
		{[]string{"-action-utilization", "0,0.9,NaN,0.5,0.3"}, "action utilization 2 is NaN"},
		{[]string{"-action-utilization", "0,0.9,0.7,0.5,0.3", "-action-deltas", "-200,-50,0,50,500"}, "-action-deltas and -action-utilization are two action sets; give one"},
		{[]string{"-reward-span", "0"}, "train: -reward-span 0, want millicores per task in (0, 1e6]"},
		{[]string{"-reward-span", "NaN"}, "train: -reward-span NaN"},
		{[]string{"-env", "cartpole", "-reward-span", "4000"}, "-reward-span apply only to -env streamscale"},
		{[]string{"-gae-lambda", "1.5"}, "train: -gae-lambda 1.5, want a number in [0, 1]"},
		{[]string{"-gae-lambda", "NaN"}, "train: -gae-lambda NaN"},
		{[]string{"-vf-coef", "-1"}, "train: -vf-coef -1, want a number in [0, 1e6]"},
		{[]string{"-target-kl", "-0.1"}, "train: -target-kl -0.1, want a number in [0, 10] (0 is off)"},
		{[]string{"-target-kl", "NaN"}, "train: -target-kl NaN, want a number in [0, 10] (0 is off)"},
		{[]string{"-vf-coef", "Inf"}, "train: -vf-coef +Inf"},
		{[]string{"-learning-rate", "lin_"}, `train: -learning-rate: ppo: schedule "lin_": "" is not a finite number`},
		{[]string{"-learning-rate", "0"}, "start must be > 0"},
		{[]string{"-n-epochs", "0"}, "train: -n-epochs 0, want ≥ 1"},
		{[]string{"-batch-size", "1"}, "train: -batch-size 1, want ≥ 2"},
		{[]string{"-batch-size", "40000"}, "train: ppo: batch size 40000 exceeds rollout size 28672"},
		{[]string{"-net-arch", "64,0"}, `train: -net-arch: "64,0": layer 1 is "0", want an integer width in [1, 4096]`},
		{[]string{"-net-arch", ""}, `train: -net-arch: "": layer 0 is ""`},
		{[]string{"-net-arch", "1,1,1,1,1,1,1,1,1"}, "has 9 layers, want 1 to 8"},
		{[]string{"-critic-arch", "256,x"}, `train: -critic-arch: "256,x": layer 1 is "x"`},
		{[]string{"-critic-arch", "5000"}, `want an integer width in [1, 4096]`},
		{[]string{"-seed", "x"}, "-seed"},
		{[]string{"-nosuchflag"}, "-nosuchflag"},
		{[]string{"extra"}, `train: unexpected argument "extra"`},
	} {
		var out, errw bytes.Buffer
		code := Main(context.Background(), tc.args, command.IO{Stdout: &out, Stderr: &errw})
		msg := errw.String()
		if code != 2 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "train") || !strings.Contains(msg, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line containing %q", tc.args, code, msg, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%q: wrote %q to stdout", tc.args, out.String())
		}
	}
}

// TestHyperparameterFlags: the PPO hyperparameter flags reach the run
// options; unset, they are nil or zero (the environment's defaults).
func TestHyperparameterFlags(t *testing.T) {
	o, err := parse(nil, command.IO{})
	if err != nil || o.GAELambda != nil || o.VFCoef != nil || o.LearningRate != nil || o.NEpochs != 0 || o.BatchSize != 0 || o.NetArch != nil || o.CriticArch != nil {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parse([]string{"-gae-lambda", "0.9", "-vf-coef", "1", "-learning-rate", "lin_3e-4", "-n-epochs", "10", "-batch-size", "512", "-net-arch", "128, 128", "-critic-arch", "256,256"}, command.IO{})
	if err != nil || *o.GAELambda != 0.9 || *o.VFCoef != 1 || *o.LearningRate != ppo.Linear(3e-4, 0) || o.NEpochs != 10 || o.BatchSize != 512 || !slices.Equal(o.NetArch, []int{128, 128}) || !slices.Equal(o.CriticArch, []int{256, 256}) {
		t.Fatalf("flags: %+v, %v", o, err)
	}
	o, err = parse([]string{"-gae-lambda", "0"}, command.IO{})
	if err != nil || *o.GAELambda != 0 {
		t.Fatalf("-gae-lambda 0 (one-step TD): %+v, %v", o, err)
	}
}

// FuzzParseWidths: a width list parses to 1–8 widths in [1, MaxWidth] or
// fails with an error.
func FuzzParseWidths(f *testing.F) {
	for _, s := range []string{"64,64", "256", "", ",", "64,-1", "1,1,1,1,1,1,1,1,1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := parseWidths(s)
		if err != nil {
			return
		}
		if len(w) < 1 || len(w) > 8 {
			t.Fatalf("%q: %d layers", s, len(w))
		}
		for _, v := range w {
			if v < 1 || v > MaxWidth {
				t.Fatalf("%q: width %d", s, v)
			}
		}
	})
}

func TestHelp(t *testing.T) {
	var out, errw bytes.Buffer
	if code := Main(context.Background(), []string{"-h"}, command.IO{Stdout: &out, Stderr: &errw}); code != 0 {
		t.Fatalf("-h: exit %d, stderr %q", code, errw.String())
	}
	for _, f := range []string{"-env", "-profile", "-scenario", "-seed", "-steps", "-envs", "-out", "-resume", "-json", "-workers", "-norm-obs", "-norm-reward", "-ent-coef", "-clip-range-vf", "-gae-lambda", "-vf-coef", "-learning-rate", "-n-epochs", "-batch-size", "-net-arch", "-critic-arch", "-config", "-force", "-progress", "-seeds"} {
		if !strings.Contains(out.String(), "  "+f+" ") && !strings.Contains(out.String(), "  "+f+"\n") {
			t.Errorf("usage does not list %s:\n%s", f, out.String())
		}
	}
	if errw.Len() != 0 {
		t.Errorf("-h wrote %q to stderr", errw.String())
	}
}

// TestNormFlags: -norm-obs and -norm-reward reach the run options, and
// are off by default (the paper's configuration).
func TestNormFlags(t *testing.T) {
	o, err := parse(nil, command.IO{})
	if err != nil || o.NormObs || o.NormReward || o.EntCoef != nil || o.ClipRangeVF != nil || o.GCPercent != DefaultGCPercent {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parse([]string{"-norm-obs", "-norm-reward", "-ent-coef", "0.01", "-clip-range-vf", "0"}, command.IO{})
	if err != nil || !o.NormObs || !o.NormReward || *o.EntCoef != 0.01 || *o.ClipRangeVF != 0 {
		t.Fatalf("flags: %+v, %v", o, err)
	}
}

// TestProgressLines: a line per iteration on stderr with -progress, or on
// a terminal without -json; none otherwise.
func TestProgressLines(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		terminal bool
		lines    int
	}{
		{nil, false, 0},
		{[]string{"-progress"}, false, 8},
		{nil, true, 8},
		{[]string{"-json"}, true, 0},
		{[]string{"-json", "-progress"}, false, 8},
	} {
		var out, errw bytes.Buffer
		args := append([]string{"-env", "cartpole", "-steps", "2048", "-envs", "8", "-n-epochs", "1", "-out", t.TempDir()}, tc.args...)
		if code := Main(context.Background(), args, command.IO{Stdout: &out, Stderr: &errw, Terminal: tc.terminal}); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errw.String())
		}
		got := strings.Count(errw.String(), "train: it ")
		if got != tc.lines || (tc.lines > 0 && !strings.Contains(errw.String(), "train: it 8/8  2048 steps")) {
			t.Errorf("%q terminal %v: %d progress lines, want %d:\n%s", tc.args, tc.terminal, got, tc.lines, errw.String())
		}
	}
}

// FuzzParseSeeds: a seed list parses to 1–MaxSeeds distinct seeds or
// fails with an error.
func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"1,2,3", "1-5", "1-3,2", "5-1", "", "0-18446744073709551615", "7, 1-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err != nil {
			return
		}
		if len(seeds) < 1 || len(seeds) > MaxSeeds {
			t.Fatalf("%q: %d seeds", s, len(seeds))
		}
		seen := map[uint64]bool{}
		for _, v := range seeds {
			if seen[v] {
				t.Fatalf("%q: seed %d twice", s, v)
			}
			seen[v] = true
		}
	})
}

package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"streamscale/internal/command"
	"streamscale/ppo"
	"streamscale/ppo/policy"
	"streamscale/train/progress"
)

func TestOptionErrorsBeforeWork(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o     Options
		usage bool
		want  string
	}{
		{Options{Env: "atari"}, true, `-env "atari", want streamscale or cartpole`},
		{Options{Env: "streamscale", Profile: "batch"}, true, `-profile "batch", want pred or etl`},
		{Options{Env: "cartpole", Profile: "pred", ProfileSet: true}, true, "-profile applies only"},
		{Options{Env: "cartpole", Steps: -1}, true, "-steps -1, want ≥ 0"},
		{Options{Env: "cartpole", Envs: 1}, true, "ppo: batch size 256 exceeds rollout size 32"},
		{Options{Env: "cartpole", Out: filepath.Join(file, "sub")}, false, "output directory"},
		{Options{Env: "cartpole", Out: filepath.Join(dir, "fresh"), Resume: true}, false, "-resume"},
		{Options{Env: "streamscale", Profile: "pred", Scenario: "/dev/zero"}, true, "not a regular file"},
		{Options{Env: "streamscale", Profile: "pred", Residual: "threshold:target=9"}, true, "-residual"},
	} {
		var out, errw bytes.Buffer
		err := Run(context.Background(), tc.o, command.IO{Stdout: &out, Stderr: &errw})
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUsage) != tc.usage {
			t.Errorf("%+v: err = %v, want %q (usage %v)", tc.o, err, tc.want, tc.usage)
		}
		if out.Len() != 0 {
			t.Errorf("%+v: wrote %q before failing", tc.o, out.String())
		}
	}
}

// TestSelectLast: with SelectLast no development episode chooses the
// policy (no best dev reward) and the summary says so; after one iteration
// the last iterate is the policy model selection would have kept.
func TestSelectLast(t *testing.T) {
	o := Options{Env: "streamscale", Profile: "pred", Seed: 3, Steps: 8192, Envs: 4, Workers: 1, SelectLast: true, Out: t.TempDir()}
	s, err := runJSON(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Select != "last" || s.BestDevReward != nil {
		t.Fatalf("select %q, best dev reward %v; want last and none", s.Select, s.BestDevReward)
	}
	if _, err := os.Stat(filepath.Join(o.Out, "best.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("best.json written with -select last (%v)", err)
	}
}

// TestStreamscaleShortRun trains one iteration on the simulator's training
// scenarios and checks that model selection ran on the dev scenarios and
// that the saved policy is the one reported.
func TestStreamscaleShortRun(t *testing.T) {
	out := t.TempDir()
	s, err := runJSON(t, context.Background(), Options{Env: "streamscale", Profile: "pred", Seed: 3, Steps: 8192, Envs: 4, Workers: 1, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if s.Transitions != 8192 || s.Iterations != 1 || s.Updates != 20*32 {
		t.Fatalf("summary %+v", s)
	}
	if s.BestDevReward == nil || math.IsNaN(*s.BestDevReward) {
		t.Fatalf("no dev reward in %+v", s)
	}
	if s.DevValueRMSE == nil || s.DevValueRelativeError == nil || *s.DevValueRMSE <= 0 || s.ExplainedVarianceLastQuarter == nil {
		t.Fatalf("no value diagnostics in %+v", s)
	}
	b, err := os.ReadFile(filepath.Join(out, policy.FileName+".safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%x", sha256.Sum256(b)) != s.PolicySHA256 {
		t.Fatal("saved policy does not match the reported hash")
	}
	// The default scenario is recorded in the summary and the card.
	_, card, err := policy.Read(os.DirFS(out), policy.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if s.Scenario != "realistic" || card.Scenario != "realistic" {
		t.Errorf("scenario %q in the summary, %q on the card; want realistic", s.Scenario, card.Scenario)
	}
}

func runJSON(t *testing.T, ctx context.Context, o Options) (Summary, error) {
	t.Helper()
	var out bytes.Buffer
	o.JSON = true
	if err := Run(ctx, o, command.IO{Stdout: &out}); err != nil {
		return Summary{}, err
	}
	var s Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("summary %q: %v", out.String(), err)
	}
	return s, nil
}

// TestCartPoleRunAndResume trains 6 short iterations, checks the files and
// the artifact, and checks that a run interrupted after a checkpoint and
// resumed ends with the same policy bytes.
func TestCartPoleRunAndResume(t *testing.T) {
	for _, norm := range []bool{false, true} {
		t.Run(fmt.Sprintf("norm=%v", norm), func(t *testing.T) {
			testCartPoleRunAndResume(t, Options{Env: "cartpole", Seed: 7, Steps: 1536, Envs: 8, Workers: 1, NormObs: norm, NormReward: norm})
		})
	}
}

func testCartPoleRunAndResume(t *testing.T, o Options) {
	full := o
	full.Out = t.TempDir()
	s, err := runJSON(t, context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	if s.Transitions != 1536 || s.Iterations != 6 || s.Updates != 6*20 || s.EvalEpisodes != 20 || s.EvalMeanReturn == nil || s.PolicySHA256 == "" {
		t.Fatalf("summary %+v", s)
	}
	for _, f := range []string{CSVFile, ParquetFile, CheckpointFile, SummaryFile, policy.FileName + ".json", policy.FileName + ".safetensors"} {
		if _, err := os.Stat(filepath.Join(full.Out, f)); err != nil {
			t.Error(err)
		}
	}
	p, card, err := policy.Read(os.DirFS(full.Out), policy.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if card.WeightsSHA256 != s.PolicySHA256 || card.Transitions != 1536 || card.Env != "cartpole" || p.ObsSize() != 4 {
		t.Errorf("card %+v", card)
	}
	if s.NormObs != o.NormObs || s.NormReward != o.NormReward || (card.Normalization != nil) != o.NormObs || (o.NormObs && (!card.Normalization.NormObs || !card.Normalization.NormReward)) {
		t.Errorf("normalisation: summary %v/%v, card %+v", s.NormObs, s.NormReward, card.Normalization)
	}
	if s.ExplainedVarianceLastQuarter == nil || s.ExplainedVarianceFinal == nil || s.EntropyFractionFinal == nil || s.ChosenActionProbMean == nil {
		t.Errorf("diagnostics missing: %+v", s)
	} else if f := *s.EntropyFractionFinal; f <= 0 || f > 1 || *s.ChosenActionProbMean <= 0.5 || *s.ChosenActionProbMean > 1 {
		t.Errorf("entropy fraction %v, chosen-action probability %v", f, *s.ChosenActionProbMean)
	}
	csv, _ := os.ReadFile(filepath.Join(full.Out, CSVFile))
	if lines := strings.Count(string(csv), "\n"); lines != 7 || !strings.HasPrefix(string(csv), "rollout/chosen_action_prob,rollout/ep_len_mean,") {
		t.Errorf("progress.csv has %d lines:\n%s", lines, csv)
	}

	// Interrupt once the first checkpoint exists, then resume.
	part, r := interruptThenResume(t, o)
	if r.PolicySHA256 != s.PolicySHA256 || !r.Resumed {
		t.Errorf("resumed policy %s, uninterrupted %s", r.PolicySHA256, s.PolicySHA256)
	}
	if *r.ExplainedVarianceLastQuarter != *s.ExplainedVarianceLastQuarter || *r.EntropyFractionFinal != *s.EntropyFractionFinal {
		t.Errorf("resumed diagnostics %v %v, uninterrupted %v %v", *r.ExplainedVarianceLastQuarter, *r.EntropyFractionFinal, *s.ExplainedVarianceLastQuarter, *s.EntropyFractionFinal)
	}
	csv2, _ := os.ReadFile(filepath.Join(part.Out, CSVFile))
	if strings.Count(string(csv2), "\n") != 7 {
		t.Errorf("resumed progress.csv:\n%s", csv2)
	}
	f, err := os.Open(filepath.Join(part.Out, ParquetFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	rows, err := progress.ReadParquet(f, fi.Size())
	if err != nil || len(rows) != 6 || rows[5].Iterations != 6 || rows[5].TotalTimesteps != 1536 {
		t.Errorf("progress.parquet: %d rows, %v", len(rows), err)
	}
}

// TestStreamscaleResumeKeepsSelection interrupts a simulator run after its
// first checkpoint and resumes it: the final policy, and the best dev
// reward that chose it, must equal the uninterrupted run's.
func TestStreamscaleResumeKeepsSelection(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three iterations twice")
	}
	o := Options{Env: "streamscale", Profile: "pred", Seed: 5, Steps: 3 * 8192, Envs: 4, Workers: 1}
	full := o
	full.Out = t.TempDir()
	s, err := runJSON(t, context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	if s.BestDevReward == nil {
		t.Fatal("no dev reward")
	}
	part, r := interruptThenResume(t, o)
	if r.PolicySHA256 != s.PolicySHA256 || *r.BestDevReward != *s.BestDevReward {
		t.Fatalf("resumed: policy %s reward %v; uninterrupted: %s %v", r.PolicySHA256, *r.BestDevReward, s.PolicySHA256, *s.BestDevReward)
	}
	// A tampered best policy is refused on resume.
	if err := os.WriteFile(filepath.Join(part.Out, "best.safetensors"), []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runJSON(t, context.Background(), part); err == nil || !strings.Contains(err.Error(), "best policy") {
		t.Fatalf("tampered best policy: %v", err)
	}
}

// interruptThenResume runs o in a fresh directory, cancels it once its first
// checkpoint exists, resumes it to the end and returns the resumed run's
// options and summary.
func interruptThenResume(t *testing.T, o Options) (Options, Summary) {
	t.Helper()
	part := o
	part.Out = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(part.Out, CheckpointFile)); err == nil {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if _, err := runJSON(t, ctx, part); err == nil {
		t.Log("run finished before the interrupt; resuming a finished run")
	}
	part.Resume = true
	r, err := runJSON(t, context.Background(), part)
	if err != nil {
		t.Fatal(err)
	}
	return part, r
}

// TestConfigOverrides: -norm-obs, -norm-reward, -ent-coef and
// -clip-range-vf reach the configuration; unset options keep defaults.
func TestConfigOverrides(t *testing.T) {
	s, err := prepare(Options{Env: "cartpole", Out: t.TempDir(), NormObs: true, NormReward: true, EntCoef: ptr(0.01), ClipRangeVF: ptr(0.3)})
	if err != nil {
		t.Fatal(err)
	}
	if c := s.cfg; !c.NormObs || !c.NormReward || c.EntCoef != 0.01 || c.ClipRangeVF != 0.3 || c.ClipObs != 10 {
		t.Errorf("config %+v", c)
	}
	s, err = prepare(Options{Env: "cartpole", Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if d := CartPoleConfig(); s.cfg.EntCoef != d.EntCoef || s.cfg.ClipRangeVF != d.ClipRangeVF || s.cfg.NormObs {
		t.Errorf("defaults changed: %+v", s.cfg)
	}
}

// TestHyperparameterOverrides: -gae-lambda, -vf-coef, -learning-rate,
// -n-epochs, -batch-size, -net-arch and -critic-arch reach the
// configuration, the progress log, the summary and the card (whose policy
// loads with both architectures); a change of λ changes the trained
// weights.
func TestHyperparameterOverrides(t *testing.T) {
	lr := ppo.Constant(5e-4)
	o := Options{Env: "cartpole", Seed: 7, Steps: 512, Envs: 8, Workers: 1, GAELambda: ptr(0.9), VFCoef: ptr(1.0), LearningRate: &lr, NEpochs: 3, BatchSize: 128, NetArch: []int{32}, CriticArch: []int{48, 16}, TargetKL: 5, Out: t.TempDir()}
	s, err := prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.cfg; c.Lambda != 0.9 || c.VFCoef != 1 || c.LearningRate != lr || c.Epochs != 3 || c.BatchSize != 128 || !slices.Equal(c.Hidden, []int{32}) || !slices.Equal(c.CriticHidden, []int{48, 16}) || c.TargetKL != 5 {
		t.Fatalf("config %+v", c)
	}
	sum, err := runJSON(t, context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// 2 iterations × 3 epochs × 2 minibatches of 128.
	if *sum.GAELambda != 0.9 || *sum.VFCoef != 1 || sum.LearningRate != "0.0005" || sum.NEpochs != 3 || sum.BatchSize != 128 || !slices.Equal(sum.NetArch, []int{32}) || !slices.Equal(sum.CriticArch, []int{48, 16}) || sum.Updates != 12 || sum.TargetKL != 5 {
		t.Errorf("summary %+v", sum)
	}
	pol, card, err := policy.Read(os.DirFS(o.Out), policy.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pol.Hidden(), []int{32}) || !slices.Equal(pol.CriticHidden(), []int{48, 16}) {
		t.Errorf("saved policy has actor %v, critic %v", pol.Hidden(), pol.CriticHidden())
	}
	var hp ppo.Config
	if err := json.Unmarshal(card.Hyperparameters, &hp); err != nil || hp.Lambda != 0.9 || hp.Epochs != 3 || hp.LearningRate != lr || !slices.Equal(hp.Hidden, []int{32}) {
		t.Errorf("card hyperparameters %s (%v)", card.Hyperparameters, err)
	}
	csv, _ := os.ReadFile(filepath.Join(o.Out, CSVFile))
	if strings.Count(string(csv), ",0.0005,") != 2 {
		t.Errorf("progress.csv does not log learning rate 5e-4 twice:\n%s", csv)
	}
	o2 := o
	o2.GAELambda, o2.Out = ptr(0.5), t.TempDir()
	sum2, err := runJSON(t, context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	if sum2.PolicySHA256 == sum.PolicySHA256 {
		t.Error("λ 0.5 and 0.9 trained the same weights")
	}
	// Unset, the summary records none of them.
	o3 := Options{Env: "cartpole", Seed: 7, Steps: 256, Envs: 8, Workers: 1, Out: t.TempDir()}
	sum3, err := runJSON(t, context.Background(), o3)
	if err != nil {
		t.Fatal(err)
	}
	if sum3.GAELambda != nil || sum3.VFCoef != nil || sum3.LearningRate != "" || sum3.NEpochs != 0 || sum3.BatchSize != 0 || sum3.NetArch != nil || sum3.CriticArch != nil {
		t.Errorf("default summary records overrides: %+v", sum3)
	}
}

// TestResidualRunAndResume: a residual run with the constrained objective
// records its base rule on the card and its objective and multiplier in
// the summary, selects on the dev episodes through the residual
// controller, and an interrupted and resumed run ends with the same
// policy bytes and multiplier.
func TestResidualRunAndResume(t *testing.T) {
	o := Options{Env: "streamscale", Profile: "pred", Seed: 5, Steps: 3 * 8192, Envs: 4, Workers: 1, NEpochs: 2,
		Residual: "threshold:measured:window=10:target=0.7:tol=0.1", Objective: "lagrangian:budget=0.02"}
	full := o
	full.Out = t.TempDir()
	s, err := runJSON(t, context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	if s.Residual != "threshold:measured:target=0.7:tol=0.1:window=10" || s.Objective != "lagrangian:budget=0.02:lambda=1:lr=20" || s.Lambda == nil || s.BestDevReward == nil {
		t.Fatalf("summary residual %q objective %q λ %v dev reward %v", s.Residual, s.Objective, s.Lambda, s.BestDevReward)
	}
	_, card, err := policy.Read(os.DirFS(full.Out), policy.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if card.Residual == nil || card.Residual.Base != s.Residual || card.Residual.Features != 12 {
		t.Fatalf("card residual %+v", card.Residual)
	}
	_, r := interruptThenResume(t, o)
	if r.PolicySHA256 != s.PolicySHA256 || *r.Lambda != *s.Lambda {
		t.Fatalf("resumed: policy %s λ %v; uninterrupted: %s %v", r.PolicySHA256, *r.Lambda, s.PolicySHA256, *s.Lambda)
	}
	bad := o
	bad.Out, bad.Residual = t.TempDir(), "threshold:target=9"
	if _, err := runJSON(t, context.Background(), bad); err == nil || !errors.Is(err, ErrUsage) {
		t.Errorf("bad base rule: %v, want a usage error", err)
	}
	bad.Residual, bad.ActionUtilization = "", [5]float64{}
	bad.Objective = "lagrangian"
	if _, err := runJSON(t, context.Background(), bad); err == nil || !errors.Is(err, ErrUsage) {
		t.Errorf("-objective without -residual: %v, want a usage error", err)
	}
}

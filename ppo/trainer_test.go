package ppo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"streamscale/env/cartpole"
	"streamscale/ppo/internal/nn"
)

// cartpoleVec adapts cartpole.Vec to VecEnv for tests (as the train
// command does).
type cartpoleVec struct {
	*cartpole.Vec
	r cartpole.StepResult
}

func (c *cartpoleVec) Step(actions []int, r *StepResult) error {
	c.r = cartpole.StepResult{Obs: r.Obs, Rewards: r.Rewards, Terminated: r.Terminated, Truncated: r.Truncated, FinalObs: r.FinalObs, Episodes: c.r.Episodes[:0]}
	if err := c.Vec.Step(actions, &c.r); err != nil {
		return err
	}
	r.Episodes = r.Episodes[:0]
	for _, e := range c.r.Episodes {
		r.Episodes = append(r.Episodes, Episode(e))
	}
	return nil
}

func newCartpole(t testing.TB, n int) *cartpoleVec {
	v, err := cartpole.NewVec(n)
	if err != nil {
		t.Fatal(err)
	}
	return &cartpoleVec{Vec: v}
}

// smallConfig is a CartPole run of 6 iterations with a short last minibatch.
func smallConfig(seed uint64) Config {
	c := DefaultConfig()
	c.NumEnvs, c.NumSteps, c.BatchSize, c.Epochs = 4, 25, 40, 3 // 100 per rollout: 40, 40, 20
	c.TotalTimesteps = 560                                      // 6 iterations
	c.Gamma, c.Lambda = 0.98, 0.8
	c.LearningRate, c.ClipRange = Linear(1e-3, 0), Linear(0.2, 0)
	c.Seed = seed
	return c
}

type recorder struct{ rows []Stats }

func (r *recorder) Log(s Stats) error { r.rows = append(r.rows, s); return nil }

func train(t *testing.T, cfg Config, workers int) (*Trainer, *recorder) {
	t.Helper()
	rec := &recorder{}
	tr, err := New(cfg, newCartpole(t, cfg.NumEnvs), Options{Workers: workers, Logger: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Learn(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tr, rec
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestTrainDeterministic: one seed gives identical weights (serial or
// with two workers) and logs; another seed gives different weights.
func TestTrainDeterministic(t *testing.T) {
	a, ra := train(t, smallConfig(1), 1)
	b, rb := train(t, smallConfig(1), 2)
	c, _ := train(t, smallConfig(2), 1)
	if !sameBits(a.theta, b.theta) {
		t.Error("same seed, different weights")
	}
	if sameBits(a.theta, c.theta) {
		t.Error("different seeds, same weights")
	}
	if len(ra.rows) != 6 || a.Timesteps() != 600 || a.GradientSteps() != 6*3*3 {
		t.Fatalf("rows %d, timesteps %d, gradient steps %d", len(ra.rows), a.Timesteps(), a.GradientSteps())
	}
	for i := range ra.rows {
		x, y := ra.rows[i], rb.rows[i]
		if x.ApproxKL != y.ApproxKL || x.Loss != y.Loss || x.EpRewMean != y.EpRewMean && !math.IsNaN(x.EpRewMean) {
			t.Errorf("row %d differs: %+v vs %+v", i, x, y)
		}
	}
	last := ra.rows[5]
	if last.NUpdates != 18 || last.Iteration != 6 || last.ClipFraction < 0 || last.ClipFraction > 1 || last.ApproxKL < 0 {
		t.Errorf("last row %+v", last)
	}
	// progress_remaining = 1 − 600/560 < 0 in the last iteration, as SB3.
	if want := 1e-3 * (1 - 600.0/560); math.Abs(last.LearningRate-want) > 1e-15 {
		t.Errorf("last learning rate %v, want %v", last.LearningRate, want)
	}
}

// TestTargetKL: SB3's early stop. The first minibatch of an update is at
// the rollout policy (KL 0) and always steps; with a target KL far below
// any later minibatch's the update stops at the second, which takes no
// step, and counts one epoch — the same with one worker or two. A target
// no minibatch reaches changes nothing.
func TestTargetKL(t *testing.T) {
	tiny := smallConfig(1)
	tiny.TargetKL = 1e-12
	a, ra := train(t, tiny, 1)
	b, _ := train(t, tiny, 2)
	if !sameBits(a.theta, b.theta) {
		t.Error("early stop: one worker and two differ")
	}
	if a.GradientSteps() != 6 || ra.rows[5].NUpdates != 6 {
		t.Errorf("early stop: %d gradient steps, %d updates counted; want 6 and 6", a.GradientSteps(), ra.rows[5].NUpdates)
	}
	full, _ := train(t, smallConfig(1), 1)
	if sameBits(a.theta, full.theta) {
		t.Error("early stop left the weights of a full update")
	}
	loose := smallConfig(1)
	loose.TargetKL = 1e6
	c, _ := train(t, loose, 1)
	if !sameBits(c.theta, full.theta) || c.GradientSteps() != 6*3*3 {
		t.Errorf("a target never reached changed the run (%d gradient steps)", c.GradientSteps())
	}
	bad := smallConfig(1)
	bad.TargetKL = math.NaN()
	if err := bad.Validate(); err == nil {
		t.Error("a NaN target KL validated")
	}
}

// TestResumeBitwise: 3 iterations, checkpoint, resume for the rest ends
// with the same bits as 6 uninterrupted iterations, with and without
// VecNormalize's statistics.
func TestResumeBitwise(t *testing.T) {
	for _, norm := range []bool{false, true} {
		t.Run(fmt.Sprintf("norm=%v", norm), func(t *testing.T) {
			cfg := smallConfig(3)
			cfg.NormObs, cfg.NormReward = norm, norm
			testResumeBitwise(t, cfg)
		})
	}
}

func testResumeBitwise(t *testing.T, cfg Config) {
	full, _ := train(t, cfg, 1)

	var ckpt bytes.Buffer
	stop := errors.New("stop")
	tr, err := New(cfg, newCartpole(t, cfg.NumEnvs), Options{Workers: 1, AfterIteration: func(ctx context.Context, t2 *Trainer, s Stats) error {
		if s.Iteration == 3 {
			if err := t2.WriteCheckpoint(&ckpt); err != nil {
				return err
			}
			return stop
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Learn(context.Background()); !errors.Is(err, stop) {
		t.Fatalf("learn: %v", err)
	}
	saved := append([]byte(nil), ckpt.Bytes()...)
	res, err := Resume(cfg, newCartpole(t, cfg.NumEnvs), Options{Workers: 2}, &ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Iteration() != 3 {
		t.Fatalf("resumed at %d", res.Iteration())
	}
	if err := res.Learn(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !sameBits(full.theta, res.theta) || !sameBits(full.opt.m, res.opt.m) {
		t.Error("resumed run differs from the uninterrupted one")
	}
	if fmt.Sprint(full.norm.state()) != fmt.Sprint(res.norm.state()) || fmt.Sprint(full.norm.returns) != fmt.Sprint(res.norm.returns) {
		t.Errorf("normalisation state differs: %v vs %v", full.norm.state(), res.norm.state())
	}
	if cfg.NormObs && full.Policy().Normalization() == nil {
		t.Error("policy snapshot has no statistics")
	}

	// A flipped byte is refused; so is another config.
	bad := append([]byte(nil), saved...)
	bad[len(bad)/2] ^= 1
	if _, err := Resume(cfg, newCartpole(t, cfg.NumEnvs), Options{}, bytes.NewReader(bad)); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("corrupted checkpoint: %v", err)
	}
	other := cfg
	other.EntCoef = 0.01
	if _, err := Resume(other, newCartpole(t, cfg.NumEnvs), Options{}, bytes.NewReader(saved)); err == nil {
		t.Error("checkpoint accepted under another config")
	}
}

// truncEnv is a 1-env scripted environment: observation [t, 1] at step t
// of an episode, reward 1, truncated after 2 steps (never terminated).
type truncEnv struct{ t int }

func (e *truncEnv) NumEnvs() int { return 1 }
func (e *truncEnv) ObsSize() int { return 2 }
func (e *truncEnv) Nvec() []int  { return []int{2} }
func (e *truncEnv) Reset(seed uint64, obs []float64) error {
	e.t = 0
	obs[0], obs[1] = 0, 1
	return nil
}
func (e *truncEnv) Step(actions []int, r *StepResult) error {
	e.t++
	r.Rewards[0], r.Terminated[0], r.Truncated[0] = 1, false, e.t == 2
	r.Obs[0], r.Obs[1] = float64(e.t), 1
	r.Episodes = r.Episodes[:0]
	if e.t == 2 {
		r.FinalObs[0], r.FinalObs[1] = 2, 1
		r.Episodes = append(r.Episodes, Episode{Env: 0, Return: 2, Length: 2})
		e.t = 0
		r.Obs[0] = 0
	}
	return nil
}

// TestTruncationBootstrap: on truncation the stored reward is
// 1 + γ·V(final observation); elsewhere it is 1; episode starts follow.
func TestTruncationBootstrap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumEnvs, cfg.NumSteps, cfg.BatchSize, cfg.TotalTimesteps, cfg.Epochs = 1, 4, 4, 4, 1
	tr, err := New(cfg, &truncEnv{}, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Collect with the initial weights (before any update).
	if err := tr.env.Reset(cfg.Seed, tr.lastObs); err != nil {
		t.Fatal(err)
	}
	tr.lastStarts[0], tr.started = true, true
	if err := tr.collect(); err != nil {
		t.Fatal(err)
	}
	v := make([]float64, 1)
	if err := tr.policy.Values([]float64{2, 1}, v); err != nil {
		t.Fatal(err)
	}
	boot := 1 + cfg.Gamma*v[0]
	want := []float64{1, boot, 1, boot}
	starts := []bool{true, false, true, false}
	for i := range want {
		if tr.buf.rewards[i] != want[i] || tr.buf.starts[i] != starts[i] {
			t.Errorf("step %d: reward %v start %v, want %v %v", i, tr.buf.rewards[i], tr.buf.starts[i], want[i], starts[i])
		}
	}
	if len(tr.episodes) != 2 || tr.episodes[1].Return != 2 {
		t.Errorf("episodes %v", tr.episodes)
	}
}

func TestNewValidates(t *testing.T) {
	cfg := smallConfig(1)
	cfg.NumEnvs = 3
	if _, err := New(cfg, newCartpole(t, 4), Options{}); err == nil {
		t.Error("env count mismatch accepted")
	}
	if _, err := New(smallConfig(1), newCartpole(t, 4), Options{Workers: 3}); err == nil {
		t.Error("3 workers accepted")
	}
}

// streamEnv is a shape-only stand-in for the streamscale simulator:
// observation 181, nvec 9×5, random observations and rewards.
type streamEnv struct {
	n int
	r *rand.Rand
}

func (e *streamEnv) NumEnvs() int { return e.n }
func (e *streamEnv) ObsSize() int { return 181 }
func (e *streamEnv) Nvec() []int  { return []int{5, 5, 5, 5, 5, 5, 5, 5, 5} }
func (e *streamEnv) Reset(seed uint64, obs []float64) error {
	e.r = rand.New(rand.NewPCG(seed, 0))
	for i := range obs {
		obs[i] = e.r.Float64()
	}
	return nil
}
func (e *streamEnv) Step(actions []int, r *StepResult) error {
	for i := range r.Obs {
		r.Obs[i] = e.r.Float64()
	}
	for i := range r.Rewards {
		r.Rewards[i], r.Terminated[i], r.Truncated[i] = e.r.NormFloat64(), false, false
	}
	r.Episodes = r.Episodes[:0]
	return nil
}

// BenchmarkUpdate is one minibatch update at the paper's shapes: B = 256,
// observation 181, nvec 9×5 — fill, forward, backward, clip, Adam — as
// the k-th of an epoch of 112 (with 2 workers the worker loads the next
// minibatch while the actor half runs). Beside ns/op it reports the
// matrix products' rate (GFLOP/s, from updateFLOPs) and the process's CPU
// time per update (cpu-ms/op: user + system, all goroutines, GC
// included), which a loaded machine inflates less than wall time.
func BenchmarkUpdate(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.NumSteps, cfg.TotalTimesteps = 256, 256*14
			tr, err := New(cfg, &streamEnv{n: 14}, Options{Workers: workers})
			if err != nil {
				b.Fatal(err)
			}
			if err := tr.env.Reset(1, tr.lastObs); err != nil {
				b.Fatal(err)
			}
			tr.started = true
			if err := tr.collect(); err != nil {
				b.Fatal(err)
			}
			idx := make([]int, 256)
			for i := range idx {
				idx[i] = (i * 13) % cfg.RolloutSize()
			}
			// An epoch of 112 minibatches, as the paper's rollout of 28,672
			// has: the worker loads each next one ahead.
			tr.batches = make([][]int, 112)
			for i := range tr.batches {
				tr.batches[i] = idx
			}
			var w *criticWorker
			if workers == 2 {
				w = tr.startCriticWorker()
				defer w.stop()
			}
			b.ReportAllocs()
			k := 0
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := tr.minibatch(w, k, 0.2, 1e-6); err != nil {
					b.Fatal(err)
				}
				k = (k + 1) % len(tr.batches)
			}
			b.ReportMetric(updateFLOPs(tr.arch, len(idx))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

// updateFLOPs counts the floating-point operations of one update's matrix
// products on a minibatch of batch rows (2 per multiply-add): per layer
// of either net the forward product and ∂W, and ∂X for every layer but
// the first (the observation batch has no gradient).
func updateFLOPs(a *nn.Arch, batch int) float64 {
	var macs int
	for net := range 2 {
		for l := range a.Layers(net) {
			w, _ := a.Layer(net, l)
			per := 2
			if l > 0 {
				per = 3
			}
			macs += per * w.Rows * w.Cols
		}
	}
	return 2 * float64(batch) * float64(macs)
}

// TestVFCoefWeighsTheCritic: vf_coef 0 leaves the critic's weights where
// they started (its gradient is zero, so Adam never moves them); the
// default moves them. A critic of its own (critic_arch) trains in both
// worker layouts to the same bits.
func TestVFCoefWeighsTheCritic(t *testing.T) {
	cfg := smallConfig(3)
	cfg.TotalTimesteps = 200
	init, err := New(cfg, newCartpole(t, cfg.NumEnvs), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := append([]float32(nil), init.theta[init.arch.Split:]...)
	for _, vf := range []float64{0, 0.5} {
		c := cfg
		c.VFCoef = vf
		tr, _ := train(t, c, 1)
		moved := !sameBits(start, tr.theta[tr.arch.Split:])
		if moved != (vf > 0) {
			t.Errorf("vf_coef %v: critic moved %v", vf, moved)
		}
	}
	c := cfg
	c.CriticHidden = []int{32, 16, 8}
	one, _ := train(t, c, 1)
	two, _ := train(t, c, 2)
	if !sameBits(one.theta, two.theta) || len(one.theta) == len(init.theta) {
		t.Errorf("critic_arch: one and two workers differ (%v), or the layout did not change (%d parameters)", !sameBits(one.theta, two.theta), len(one.theta))
	}
}

// TestFirstLogitBias: the initial policy chooses each dimension's first
// choice with probability about e^b/(e^b + 4) (the head's weights are
// orthogonal with gain 0.01, so its logits are nearly the biases); b = 0
// is SB3's initialisation, bit for bit.
func TestFirstLogitBias(t *testing.T) {
	cfg := DefaultConfig()
	plain, err := New(cfg, &streamEnv{n: 14}, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg.FirstLogitBias = 2
	if cfg.Hash() == DefaultConfig().Hash() {
		t.Fatal("the bias does not change the configuration's hash")
	}
	biased, err := New(cfg, &streamEnv{n: 14}, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, 181)
	for i := range obs {
		obs[i] = float64(i%7) / 7
	}
	acts := make([]int, 9)
	logps, ents, vals := make([]float64, 1), make([]float64, 1), make([]float64, 1)
	want := math.Exp(2) / (math.Exp(2) + 4)
	if err := biased.Policy().Evaluate(obs, acts, logps, ents, vals); err != nil {
		t.Fatal(err)
	}
	// logps is the sum over the nine dimensions of log p(choice 0).
	if got := math.Exp(logps[0] / 9); math.Abs(got-want) > 0.02 {
		t.Errorf("p(first choice) ≈ %.3f, want %.3f", got, want)
	}
	if err := plain.Policy().Evaluate(obs, acts, logps, ents, vals); err != nil {
		t.Fatal(err)
	}
	if got := math.Exp(logps[0] / 9); math.Abs(got-0.2) > 0.02 {
		t.Errorf("without the bias p(first choice) ≈ %.3f, want 0.2", got)
	}
	cfg.FirstLogitBias = math.NaN()
	if err := cfg.Validate(); err == nil {
		t.Error("NaN bias accepted")
	}
}

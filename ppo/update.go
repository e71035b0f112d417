package ppo

import (
	"fmt"
	"math"
	"sync"

	"streamscale/ppo/internal/nn"
)

// graph returns the loss graph of this batch size in slot 0 or 1 (built on
// first use). Consecutive minibatches use alternate slots, so that the
// next one can be loaded while the current one runs.
func (t *Trainer) graph(batch, slot int) (*lossGraph[float32], error) {
	pair, ok := t.graphs[batch]
	if !ok {
		pair = new([2]*lossGraph[float32])
		t.graphs[batch] = pair
	}
	if pair[slot] == nil {
		g, err := newLossGraph(t.arch, batch, t.theta, t.cfg.EntCoef, t.cfg.VFCoef, t.cfg.ClipRangeVF > 0)
		if err != nil {
			return nil, err
		}
		g.bindGrads(t.grad)
		pair[slot] = g
	}
	return pair[slot], nil
}

// update is SB3's PPO.train: Epochs passes over the rollout in fresh
// random permutations, minibatches of BatchSize (the last one shorter),
// one Adam step per minibatch after global-norm clipping. With TargetKL
// set, the first minibatch whose approximate KL exceeds 1.5·TargetKL is
// counted in the losses and the epoch's KL but takes no step, and the
// update ends there, its epoch counted, as SB3's does.
func (t *Trainer) update(progress float64) (Stats, error) {
	cfg, b := t.cfg, t.buf
	lr, clip := cfg.LearningRate.At(progress), cfg.ClipRange.At(progress)
	total := cfg.RolloutSize()
	var w *criticWorker
	if t.opts.Workers == 2 {
		w = t.startCriticWorker()
		defer w.stop()
	}
	var pgSum, entSum, vfSum, cfSum float64
	var nMinibatch int
	var kl float64
	var loss float64
	stop := false
	for range cfg.Epochs {
		for i := range t.perm {
			t.perm[i] = i
		}
		t.shuffle.Shuffle(len(t.perm), func(i, j int) { t.perm[i], t.perm[j] = t.perm[j], t.perm[i] })
		t.batches = t.batches[:0]
		for start := 0; start < total; start += cfg.BatchSize {
			t.batches = append(t.batches, t.perm[start:min(start+cfg.BatchSize, total)])
		}
		var klSum float64
		var klN int
		for k := range t.batches {
			m, err := t.minibatch(w, k, clip, lr)
			if err != nil {
				return Stats{}, err
			}
			pgSum += m.pg
			entSum += m.ent
			vfSum += m.vf
			cfSum += m.clipFrac
			nMinibatch++
			klSum += m.kl
			klN++
			loss = m.pg + cfg.EntCoef*m.ent + cfg.VFCoef*m.vf
			if m.stopped {
				stop = true
				break
			}
		}
		t.epochs++
		kl = klSum / float64(klN) // SB3 logs the last epoch's mean
		if stop {
			break
		}
	}
	if w != nil {
		// The critic's last Adam step must land before the weights are
		// used again.
		w.stop()
	}
	return Stats{
		Iteration:           t.iteration,
		Timesteps:           t.timesteps,
		NUpdates:            t.epochs,
		GradientSteps:       t.gradSteps,
		ApproxKL:            kl,
		ClipFraction:        cfSum / float64(nMinibatch),
		EntropyLoss:         entSum / float64(nMinibatch),
		PolicyGradientLoss:  pgSum / float64(nMinibatch),
		ValueLoss:           vfSum / float64(nMinibatch),
		Loss:                loss,
		ExplainedVariance:   explainedVariance(b.values, b.returns),
		ExplainedVarianceMC: explainedVariance(b.values, b.mcReturns),
		EntropyFraction:     -entSum / float64(nMinibatch) / t.arch.MaxEntropy(),
		ChosenActionProb:    chosenActionProb(b.logps, len(t.arch.Nvec)),
		LearningRate:        lr,
		ClipRange:           clip,
	}, nil
}

// minibatchStats are one minibatch's losses and diagnostics.
type minibatchStats struct {
	pg, ent, vf float64 // policy-gradient loss, −mean entropy, value loss
	clipFrac    float64 // share of samples with |ρ − 1| > ε
	kl          float64 // mean of (ρ − 1) − log ρ
	stopped     bool    // kl exceeded 1.5·TargetKL: no step was taken
}

// minibatch takes one Adam step on the epoch's k-th minibatch: loss and
// gradient from the graph, global-norm clipping, Adam. With a critic
// worker (w != nil) the critic half, its share of the clipping and Adam
// step, and the loading of minibatch k+1 run on the worker while this
// goroutine runs the actor half; every value is computed by the same
// operations in the same order either way, so the weights are bitwise
// the same.
//
// With TargetKL set and the minibatch's KL above 1.5·TargetKL it takes
// no step (stopped); the critic worker's graph for the next minibatch is
// loaded and left unused.
func (t *Trainer) minibatch(w *criticWorker, k int, clip, lr float64) (minibatchStats, error) {
	idx := t.batches[k]
	g, err := t.graph(len(idx), k%2)
	if err != nil {
		return minibatchStats{}, err
	}
	if w == nil || k == 0 {
		// The worker loads every later minibatch of the epoch ahead.
		t.fill(g, idx, clip)
	}
	if w == nil {
		if err := g.run(t.grad, false); err != nil {
			return minibatchStats{}, err
		}
		t.netSums(nn.ActorNet)
		t.netSums(nn.CriticNet)
	} else {
		j := criticJob{step: w.pending, g: g, clip: clip}
		w.pending = nil
		if k+1 < len(t.batches) {
			next := t.batches[k+1]
			if j.next, err = t.graph(len(next), (k+1)%2); err != nil {
				return minibatchStats{}, err
			}
			j.nextIdx = next
		}
		w.jobs <- j
		errA := g.runActor(t.grad)
		if errA == nil {
			t.netSums(nn.ActorNet)
		}
		errC := <-w.done
		if err := cmpErr(errA, errC); err != nil {
			return minibatchStats{}, err
		}
	}
	m := minibatchStats{pg: scalarOf(g.pg), ent: scalarOf(g.ent), vf: scalarOf(g.vf)}
	ratio, logp := vectorOf[float32](g.ratio), vectorOf[float32](g.logp)
	var clipped int
	for k, r := range ratio {
		if math.Abs(float64(r)-1) > clip {
			clipped++
		}
		logRatio := float64(logp[k]) - float64(g.oldLogp[k])
		m.kl += (math.Exp(logRatio) - 1) - logRatio
	}
	m.kl /= float64(len(idx))
	m.clipFrac = float64(clipped) / float64(len(idx))
	if kl := t.cfg.TargetKL; kl > 0 && m.kl > 1.5*kl {
		m.stopped = true
		return m, nil
	}
	_, c, scale := clipCoef(t.sums, t.cfg.MaxGradNorm)
	step := t.opt.begin(lr)
	if w == nil {
		t.applyStep(nn.ActorNet, c, scale, step)
		t.applyStep(nn.CriticNet, c, scale, step)
	} else {
		// The worker applies the critic's share before its next job.
		w.pending = &criticStep{c: c, scale: scale, step: step}
		t.applyStep(nn.ActorNet, c, scale, step)
	}
	t.policy.WeightsChanged()
	t.gradSteps++
	return m, nil
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("ppo: running loss graph: %w", err)
		}
	}
	return nil
}

// netSums fills t.sums for the parameters of one net (clipGradNorm's
// per-parameter terms). Each sum is a chain of float64 additions in index
// order, bound by the adder's latency; the largest parameter's chain runs
// interleaved with the others' (one after another), so that the CPU
// overlaps two chains. Every sum is the same as sumSquares's.
func (t *Trainer) netSums(net int) {
	ps := t.netParams[net]
	big := ps[0]
	for _, i := range ps {
		if t.arch.Params[i].Len() > t.arch.Params[big].Len() {
			big = i
		}
	}
	grad := func(i int) []float32 {
		p := t.arch.Params[i]
		return t.grad[p.Off : p.Off+p.Len()]
	}
	a, sa := grad(big), 0.0
	for _, i := range ps {
		if i == big {
			continue
		}
		b := grad(i)
		n := min(len(a), len(b))
		var sb float64
		sa, sb = sumSquares2(a[:n], sa, b[:n])
		for _, v := range b[n:] { // the rest of b, when a has run out
			sb += float64(v) * float64(v)
		}
		t.sums[i] = sb
		a = a[n:]
	}
	for _, v := range a {
		sa += float64(v) * float64(v)
	}
	t.sums[big] = sa
}

// applyStep clips (scales by c when scale) and applies the Adam step to
// the parameters of one net, in one pass over the net's range of the flat
// vector (a net's parameters are contiguous: actor [0, Split), critic
// [Split, Size)).
func (t *Trainer) applyStep(net int, c float32, scale bool, s adamStep) {
	lo, hi := 0, t.arch.Split
	if net == nn.CriticNet {
		lo, hi = t.arch.Split, t.arch.Size
	}
	if !scale {
		c = 1 // g·1 = g: the gradient is left as it is
	}
	t.opt.applyScaled(s, c, t.theta, t.grad, lo, hi)
}

// criticWorker is the goroutine that runs the critic's share of every
// minibatch of one update while the caller runs the actor's. Per job it
// first applies the previous minibatch's clip factor and Adam step to the
// critic's parameters, then runs the critic half, computes the critic's
// gradient sums of squares, loads the next minibatch into its graph and
// reports on done. The two goroutines touch disjoint parameter, gradient
// and optimiser ranges; the channels order everything else. Two
// hand-offs per minibatch, as many as starting and joining a goroutine.
type criticWorker struct {
	jobs    chan criticJob
	done    chan error
	wg      sync.WaitGroup
	pending *criticStep // the caller's: the step the worker has yet to apply
	stopped bool
}

// criticJob is one minibatch for the worker: a step to apply first (if
// step is not nil), the graph to run (none for the last step of an
// update), and the next minibatch to load (if next is not nil).
type criticJob struct {
	step    *criticStep
	g, next *lossGraph[float32]
	nextIdx []int
	clip    float64
}

type criticStep struct {
	c     float32
	scale bool
	step  adamStep
}

func (t *Trainer) startCriticWorker() *criticWorker {
	w := &criticWorker{jobs: make(chan criticJob), done: make(chan error, 1)}
	w.wg.Go(func() {
		for j := range w.jobs {
			if j.step != nil {
				t.applyStep(nn.CriticNet, j.step.c, j.step.scale, j.step.step)
			}
			if j.g == nil {
				continue
			}
			err := j.g.runCritic(t.grad)
			if err == nil {
				t.netSums(nn.CriticNet)
				if j.next != nil {
					t.fill(j.next, j.nextIdx, j.clip)
				}
			}
			w.done <- err
		}
	})
	return w
}

// stop applies the pending step, ends the worker and waits for it; later
// calls do nothing.
func (w *criticWorker) stop() {
	if w.stopped {
		return
	}
	w.stopped = true
	if w.pending != nil {
		w.jobs <- criticJob{step: w.pending}
		w.pending = nil
	}
	close(w.jobs)
	w.wg.Wait()
}

package run

import (
	"context"
	"testing"

	"streamscale/ppo"
)

type statsRecorder struct{ rows []ppo.Stats }

func (r *statsRecorder) Log(s ppo.Stats) error { r.rows = append(r.rows, s); return nil }

// learnCartPole trains rl-zoo's CartPole configuration for steps env
// steps and returns the progress rows.
func learnCartPole(t *testing.T, steps int, norm bool) []ppo.Stats {
	t.Helper()
	cfg := CartPoleConfig()
	cfg.TotalTimesteps, cfg.Seed = steps, 1
	cfg.NormObs, cfg.NormReward = norm, norm
	v, err := newCartPoleVec(cfg.NumEnvs)
	if err != nil {
		t.Fatal(err)
	}
	rec := &statsRecorder{}
	tr, err := ppo.New(cfg, v, ppo.Options{Logger: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Learn(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.rows
}

// TestCartPoleLearns: a short CartPole run with VecNormalize (rl-zoo's
// configuration, 20,000 steps, 78 iterations) must learn: the critic
// explains at least half of the returns' variance over the last quarter
// of iterations, the policy's entropy ends below 70% of its maximum
// (log 2), and episodes get longer. With the critic's learning removed
// (vf_coef 0) the explained variance stays near 0 and the test fails.
func TestCartPoleLearns(t *testing.T) {
	rows := learnCartPole(t, 20000, true)
	q := rows[len(rows)-(len(rows)+3)/4:]
	var ev float64
	for _, r := range q {
		ev += r.ExplainedVariance
	}
	ev /= float64(len(q))
	last := rows[len(rows)-1]
	t.Logf("%d iterations: explained variance %.3f over the last %d, entropy fraction %.3f, chosen-action probability %.3f, ep_rew_mean %.1f", len(rows), ev, len(q), last.EntropyFraction, last.ChosenActionProb, last.EpRewMean)
	if ev < 0.5 {
		t.Errorf("explained variance %.3f over the last quarter, want ≥ 0.5", ev)
	}
	if last.EntropyFraction > 0.7 {
		t.Errorf("final entropy %.3f of its maximum, want ≤ 0.7", last.EntropyFraction)
	}
	if last.EpRewMean < 80 {
		t.Errorf("final ep_rew_mean %.1f, want ≥ 80 (random: about 20)", last.EpRewMean)
	}
}

package ppo

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"streamscale/rng"
)

// Checkpoint file layout: the 8-byte magic, the SHA-256 of the payload,
// then the payload (encoding/gob of checkpointState).
const checkpointMagic = "SSPPOCK1"

// ErrCorruptCheckpoint is returned (wrapped) for a checkpoint whose
// checksum or framing is wrong.
var ErrCorruptCheckpoint = errors.New("ppo: checkpoint is corrupted")

// maxCheckpoint bounds the payload read from a checkpoint (1 GiB).
const maxCheckpoint = 1 << 30

type checkpointState struct {
	ConfigHash string
	Config     Config
	Obs        int
	Nvec       []int

	Iteration, Timesteps, GradSteps, Epochs int
	Started                                 bool

	Theta, AdamM, AdamV []float32
	AdamStep            int64
	Shuffle, Action     []byte

	LastObs    []float64
	LastStarts []bool
	Episodes   []Episode
	Env        []byte // StatefulVecEnv state; nil when the env has none

	// VecNormalize state (zero when normalisation is off)
	ObsMean, ObsVar           []float64
	ObsCount                  float64
	RetMean, RetVar, RetCount float64
	Returns                   []float64
}

// WriteCheckpoint writes everything a run needs to continue at the next
// iteration: weights, Adam moments and step, the random streams, the
// last observations and episode window, the normalisation statistics and
// discounted returns, and the environment's state when it is a
// StatefulVecEnv. Call it between iterations (e.g. from
// AfterIteration).
func (t *Trainer) WriteCheckpoint(w io.Writer) error {
	st := checkpointState{
		ConfigHash: t.cfg.Hash(), Config: t.cfg, Obs: t.arch.Obs, Nvec: t.arch.Nvec,
		Iteration: t.iteration, Timesteps: t.timesteps, GradSteps: t.gradSteps, Epochs: t.epochs,
		Started: t.started,
		Theta:   t.theta, AdamM: t.opt.m, AdamV: t.opt.v, AdamStep: t.opt.step,
		LastObs: t.lastObs, LastStarts: t.lastStarts, Episodes: t.episodes,
		RetMean: t.norm.ret.Mean[0], RetVar: t.norm.ret.Var[0], RetCount: t.norm.ret.Count, Returns: t.norm.returns,
	}
	if o := t.norm.obs; o != nil {
		st.ObsMean, st.ObsVar, st.ObsCount = o.Mean, o.Var, o.Count
	}
	var err error
	if st.Shuffle, err = t.shuffleSrc.MarshalBinary(); err != nil {
		return fmt.Errorf("ppo: checkpoint: %w", err)
	}
	if st.Action, err = t.actionSrc.MarshalBinary(); err != nil {
		return fmt.Errorf("ppo: checkpoint: %w", err)
	}
	if se, ok := t.env.(StatefulVecEnv); ok {
		if st.Env, err = se.MarshalBinary(); err != nil {
			return fmt.Errorf("ppo: checkpoint: environment state: %w", err)
		}
	}
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(&st); err != nil {
		return fmt.Errorf("ppo: checkpoint: %w", err)
	}
	sum := sha256.Sum256(payload.Bytes())
	for _, b := range [][]byte{[]byte(checkpointMagic), sum[:], payload.Bytes()} {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("ppo: checkpoint: %w", err)
		}
	}
	return nil
}

// Resume builds a trainer from a checkpoint written by WriteCheckpoint.
// The configuration must be the one the checkpoint was written with, and
// env must have the same shape. If env is a StatefulVecEnv and the
// checkpoint holds its state, the state is restored and the resumed run
// ends bitwise identical to an uninterrupted one; otherwise env is reset
// from rng.Derive(seed, rng.PPOResume+"<timesteps>") and the run
// continues from there.
func Resume(cfg Config, env VecEnv, opts Options, r io.Reader) (*Trainer, error) {
	st, err := readCheckpoint(r)
	if err != nil {
		return nil, err
	}
	if st.ConfigHash != cfg.Hash() {
		return nil, fmt.Errorf("ppo: checkpoint was written with config %.12s, this run has %.12s", st.ConfigHash, cfg.Hash())
	}
	t, err := New(cfg, env, opts)
	if err != nil {
		return nil, err
	}
	a := t.arch
	switch {
	case st.Obs != a.Obs || !slices.Equal(st.Nvec, a.Nvec):
		return nil, fmt.Errorf("ppo: checkpoint is for observations %d and nvec %v, environment has %d and %v", st.Obs, st.Nvec, a.Obs, a.Nvec)
	case len(st.Theta) != a.Size || len(st.AdamM) != a.Size || len(st.AdamV) != a.Size:
		return nil, fmt.Errorf("%w: parameter vectors have the wrong size", ErrCorruptCheckpoint)
	case len(st.LastObs) != len(t.lastObs) || len(st.LastStarts) != len(t.lastStarts) || len(st.Episodes) > epWindow:
		return nil, fmt.Errorf("%w: rollout state has the wrong size", ErrCorruptCheckpoint)
	case st.Iteration < 0 || st.Iteration > cfg.Iterations():
		return nil, fmt.Errorf("%w: iteration %d outside [0, %d]", ErrCorruptCheckpoint, st.Iteration, cfg.Iterations())
	case t.norm.active() && len(st.Returns) != cfg.NumEnvs:
		return nil, fmt.Errorf("%w: normalisation state has the wrong size", ErrCorruptCheckpoint)
	case t.norm.obs != nil && (len(st.ObsMean) != a.Obs || len(st.ObsVar) != a.Obs):
		return nil, fmt.Errorf("%w: observation statistics have the wrong size", ErrCorruptCheckpoint)
	}
	if t.norm.active() {
		t.norm.ret.Mean[0], t.norm.ret.Var[0], t.norm.ret.Count = st.RetMean, st.RetVar, st.RetCount
		copy(t.norm.returns, st.Returns)
		if o := t.norm.obs; o != nil {
			copy(o.Mean, st.ObsMean)
			copy(o.Var, st.ObsVar)
			o.Count = st.ObsCount
		}
		if err := t.syncNorm(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
		}
	}
	copy(t.theta, st.Theta) // the graphs and policy view t.theta
	t.policy.WeightsChanged()
	copy(t.opt.m, st.AdamM)
	copy(t.opt.v, st.AdamV)
	t.opt.step = st.AdamStep
	if err := t.shuffleSrc.UnmarshalBinary(st.Shuffle); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	if err := t.actionSrc.UnmarshalBinary(st.Action); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	t.iteration, t.timesteps, t.gradSteps, t.epochs = st.Iteration, st.Timesteps, st.GradSteps, st.Epochs
	t.episodes = st.Episodes
	copy(t.lastObs, st.LastObs)
	copy(t.lastStarts, st.LastStarts)
	t.started = st.Started
	if !st.Started {
		return t, nil
	}
	se, ok := env.(StatefulVecEnv)
	if ok && st.Env != nil {
		if err := se.UnmarshalBinary(st.Env); err != nil {
			return nil, fmt.Errorf("ppo: restoring environment state: %w", err)
		}
		return t, nil
	}
	if err := env.Reset(rng.Derive(cfg.Seed, rng.PPOResume+strconv.Itoa(st.Timesteps)), t.lastObs); err != nil {
		return nil, fmt.Errorf("ppo: resetting environment: %w", err)
	}
	t.norm.reset(t.lastObs) // VecNormalize.reset: statistics updated, returns zeroed
	if err := t.syncNorm(); err != nil {
		return nil, err
	}
	for i := range t.lastStarts {
		t.lastStarts[i] = true
	}
	return t, nil
}

func readCheckpoint(r io.Reader) (*checkpointState, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCheckpoint+1))
	if err != nil {
		return nil, fmt.Errorf("ppo: reading checkpoint: %w", err)
	}
	if len(b) > maxCheckpoint {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrCorruptCheckpoint, maxCheckpoint)
	}
	if len(b) < len(checkpointMagic)+sha256.Size || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return nil, fmt.Errorf("%w: not a streamscale PPO checkpoint", ErrCorruptCheckpoint)
	}
	sum := b[len(checkpointMagic) : len(checkpointMagic)+sha256.Size]
	payload := b[len(checkpointMagic)+sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: sha256 %x does not match the recorded %x", ErrCorruptCheckpoint, got[:6], sum[:6])
	}
	var st checkpointState
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptCheckpoint, err)
	}
	return &st, nil
}

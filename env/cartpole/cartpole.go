package cartpole

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"streamscale/rng"
)

// Physical constants of CartPole-v1.
const (
	Gravity         = 9.8
	MassCart        = 1.0
	MassPole        = 0.1
	TotalMass       = MassCart + MassPole
	Length          = 0.5 // half the pole's length
	PoleMassLength  = MassPole * Length
	ForceMag        = 10.0
	Tau             = 0.02 // seconds per step
	ThetaThreshold  = 12 * 2 * math.Pi / 360
	XThreshold      = 2.4
	MaxEpisodeSteps = 500
	ObsSize         = 4 // x, ẋ, θ, θ̇
)

// ErrNeedsReset is returned by Step on an env whose episode has ended.
var ErrNeedsReset = errors.New("cartpole: step after the episode ended; call Reset")

// Env is one CartPole-v1 environment.
type Env struct {
	state [4]float64
	steps int
	done  bool
	fresh bool // Reset has been called
	src   *rand.PCG
	rng   *rand.Rand
}

// New returns an env that must be Reset before stepping.
func New() *Env {
	src := rand.NewPCG(0, 0)
	return &Env{src: src, rng: rand.New(src), done: true}
}

// Reset reseeds the env's stream from seed and starts an episode.
func (e *Env) Reset(seed uint64) [4]float64 {
	rng.Reseed(e.src, seed, rng.CartPoleReset)
	e.fresh = true
	return e.restart()
}

// restart begins an episode from the current stream (autoreset).
func (e *Env) restart() [4]float64 {
	for i := range e.state {
		e.state[i] = -0.05 + 0.1*e.rng.Float64()
	}
	e.steps, e.done = 0, false
	return e.Obs()
}

// Obs is the current observation, rounded to float32.
func (e *Env) Obs() [4]float64 {
	var o [4]float64
	for i, v := range e.state {
		o[i] = float64(float32(v))
	}
	return o
}

// State is the exact (float64) state x, ẋ, θ, θ̇.
func (e *Env) State() [4]float64 { return e.state }

// SetState starts an episode from s (for tests).
func (e *Env) SetState(s [4]float64) {
	e.state, e.steps, e.done, e.fresh = s, 0, false, true
}

// Step pushes the cart left (action 0) or right (action 1) for one step.
func (e *Env) Step(action int) (obs [4]float64, reward float64, terminated, truncated bool, err error) {
	if action != 0 && action != 1 {
		return obs, 0, false, false, fmt.Errorf("cartpole: action %d, want 0 or 1", action)
	}
	if !e.fresh || e.done {
		return obs, 0, false, false, ErrNeedsReset
	}
	x, xDot, theta, thetaDot := e.state[0], e.state[1], e.state[2], e.state[3]
	force := -ForceMag
	if action == 1 {
		force = ForceMag
	}
	cos, sin := math.Cos(theta), math.Sin(theta)
	temp := (force + PoleMassLength*thetaDot*thetaDot*sin) / TotalMass
	thetaAcc := (Gravity*sin - cos*temp) / (Length * (4.0/3.0 - MassPole*cos*cos/TotalMass))
	xAcc := temp - PoleMassLength*thetaAcc*cos/TotalMass
	// Euler, positions first from the old velocities.
	x += Tau * xDot
	xDot += Tau * xAcc
	theta += Tau * thetaDot
	thetaDot += Tau * thetaAcc
	e.state = [4]float64{x, xDot, theta, thetaDot}
	e.steps++
	terminated = x < -XThreshold || x > XThreshold || theta < -ThetaThreshold || theta > ThetaThreshold
	truncated = e.steps >= MaxEpisodeSteps
	e.done = terminated || truncated
	return e.Obs(), 1, terminated, truncated, nil
}

// StepResult mirrors ppo.StepResult (this package does not import ppo).
type StepResult struct {
	Obs        []float64
	Rewards    []float64
	Terminated []bool
	Truncated  []bool
	FinalObs   []float64
	Episodes   []Episode
}

// Episode is a finished episode of env Env.
type Episode struct {
	Env    int
	Return float64
	Length int
}

// Vec is n CartPole envs stepped together; an env whose episode ends is
// reset within the same step (its next observation is the new episode's
// first, the last one goes to FinalObs), as SB3's VecEnv.
type Vec struct {
	envs    []*Env
	returns []float64
}

// NewVec returns n envs; n must be positive.
func NewVec(n int) (*Vec, error) {
	if n < 1 {
		return nil, fmt.Errorf("cartpole: need at least one env, got %d", n)
	}
	v := &Vec{envs: make([]*Env, n), returns: make([]float64, n)}
	for i := range v.envs {
		v.envs[i] = New()
	}
	return v, nil
}

// NumEnvs is the number of envs.
func (v *Vec) NumEnvs() int { return len(v.envs) }

// ObsSize is 4.
func (v *Vec) ObsSize() int { return ObsSize }

// Nvec is [2]: push left or right.
func (v *Vec) Nvec() []int { return []int{2} }

// Reset seeds env i from rng.Derive(seed, rng.CartPoleVec+"<i>") and
// writes the first observations.
func (v *Vec) Reset(seed uint64, obs []float64) error {
	if len(obs) != len(v.envs)*ObsSize {
		return fmt.Errorf("cartpole: observation buffer has %d values, want %d", len(obs), len(v.envs)*ObsSize)
	}
	for i, e := range v.envs {
		o := e.Reset(rng.Derive(seed, rng.CartPoleVec+strconv.Itoa(i)))
		copy(obs[i*ObsSize:], o[:])
		v.returns[i] = 0
	}
	return nil
}

// Step applies one action per env and fills r (slices sized for NumEnvs;
// Episodes is replaced). Bad input leaves every env unchanged.
func (v *Vec) Step(actions []int, r *StepResult) error {
	n := len(v.envs)
	if len(actions) != n {
		return fmt.Errorf("cartpole: %d actions, want %d", len(actions), n)
	}
	if len(r.Obs) != n*ObsSize || len(r.FinalObs) != n*ObsSize || len(r.Rewards) != n || len(r.Terminated) != n || len(r.Truncated) != n {
		return fmt.Errorf("cartpole: step result not sized for %d envs", n)
	}
	for i, a := range actions {
		if a != 0 && a != 1 {
			return fmt.Errorf("cartpole: action of env %d is %d, want 0 or 1", i, a)
		}
		if !v.envs[i].fresh {
			return ErrNeedsReset
		}
	}
	r.Episodes = r.Episodes[:0]
	for i, e := range v.envs {
		o, rew, term, trunc, err := e.Step(actions[i])
		if err != nil {
			return err
		}
		v.returns[i] += rew
		r.Rewards[i], r.Terminated[i], r.Truncated[i] = rew, term, trunc
		if term || trunc {
			copy(r.FinalObs[i*ObsSize:], o[:])
			r.Episodes = append(r.Episodes, Episode{Env: i, Return: v.returns[i], Length: e.steps})
			v.returns[i] = 0
			o = e.restart()
		}
		copy(r.Obs[i*ObsSize:], o[:])
	}
	return nil
}

// MarshalBinary encodes every env's state, step count and random stream.
func (v *Vec) MarshalBinary() ([]byte, error) {
	var out []byte
	out = binary.LittleEndian.AppendUint32(out, uint32(len(v.envs)))
	for i, e := range v.envs {
		for _, s := range e.state {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(s))
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(e.steps))
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v.returns[i]))
		flags := byte(0)
		if e.done {
			flags |= 1
		}
		if e.fresh {
			flags |= 2
		}
		out = append(out, flags)
		pcg, err := e.src.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("cartpole: %w", err)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(pcg)))
		out = append(out, pcg...)
	}
	return out, nil
}

// UnmarshalBinary restores a state written by MarshalBinary for the same
// number of envs; on error v is unchanged.
func (v *Vec) UnmarshalBinary(b []byte) error {
	bad := fmt.Errorf("cartpole: malformed vec state")
	if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) != len(v.envs) {
		return fmt.Errorf("cartpole: vec state is not for %d envs", len(v.envs))
	}
	b = b[4:]
	envs := make([]*Env, len(v.envs))
	returns := make([]float64, len(v.envs))
	for i := range envs {
		if len(b) < 4*8+8+8+1+4 {
			return bad
		}
		e := New()
		for j := range e.state {
			e.state[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*j:]))
		}
		b = b[32:]
		e.steps = int(binary.LittleEndian.Uint64(b))
		returns[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		e.done, e.fresh = b[16]&1 != 0, b[16]&2 != 0
		n := int(binary.LittleEndian.Uint32(b[17:]))
		b = b[21:]
		if len(b) < n {
			return bad
		}
		if err := e.src.UnmarshalBinary(b[:n]); err != nil {
			return fmt.Errorf("cartpole: %w", err)
		}
		b = b[n:]
		envs[i] = e
	}
	if len(b) != 0 {
		return bad
	}
	v.envs, v.returns = envs, returns
	return nil
}

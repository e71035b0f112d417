package ppo

import "fmt"

// VecEnv is N environments stepped together with automatic reset in the
// manner of SB3's VecEnv: when an episode ends on a step, Step returns the
// first observation of the next episode in its row of Obs and the last
// observation of the ended one in FinalObs (SB3's
// info["terminal_observation"]).
type VecEnv interface {
	// NumEnvs is the number of environments N.
	NumEnvs() int
	// ObsSize is the length of one flat observation.
	ObsSize() int
	// Nvec is the MultiDiscrete action of one environment: the number of
	// choices of each action dimension (CartPole: [2]).
	Nvec() []int
	// Reset starts a new episode in every environment, env i seeded from
	// seed+i (or a stream named after it), and writes the N·ObsSize first
	// observations into obs.
	Reset(seed uint64, obs []float64) error
	// Step applies actions (N·len(Nvec) indices, env-major) and fills r.
	Step(actions []int, r *StepResult) error
}

// StatefulVecEnv is a VecEnv whose state (episodes in progress, random
// streams) can be saved in a checkpoint, so a resumed run continues
// bitwise identically to an uninterrupted one.
type StatefulVecEnv interface {
	VecEnv
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}

// StepResult is what VecEnv.Step reports for one step of all N envs. The
// caller allocates it with NewStepResult; Step overwrites every element of
// the slices and replaces Episodes.
type StepResult struct {
	Obs        []float64 // N·ObsSize next observations, already reset where an episode ended
	Rewards    []float64 // N rewards of this step
	Terminated []bool    // N: the episode reached a terminal state (no bootstrap)
	Truncated  []bool    // N: the episode was cut off (time limit); the value of FinalObs is bootstrapped
	FinalObs   []float64 // N·ObsSize; row i is the last observation of env i's ended episode where Terminated[i] || Truncated[i], unspecified elsewhere
	Episodes   []Episode // episodes that ended on this step, in env order (SB3's Monitor info["episode"])
}

// Episode summarises a finished episode.
type Episode struct {
	Env    int     // environment index
	Return float64 // undiscounted sum of the episode's rewards (before any bootstrap)
	Length int     // steps in the episode
}

// NewStepResult allocates a StepResult for n envs of observation size obs.
func NewStepResult(n, obs int) *StepResult {
	return &StepResult{
		Obs:        make([]float64, n*obs),
		Rewards:    make([]float64, n),
		Terminated: make([]bool, n),
		Truncated:  make([]bool, n),
		FinalObs:   make([]float64, n*obs),
	}
}

func (r *StepResult) check(n, obs int) error {
	if len(r.Obs) != n*obs || len(r.Rewards) != n || len(r.Terminated) != n || len(r.Truncated) != n || len(r.FinalObs) != n*obs {
		return fmt.Errorf("ppo: step result sized for another environment (want %d envs × %d observations)", n, obs)
	}
	return nil
}

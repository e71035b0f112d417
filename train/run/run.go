package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"streamscale/env"
	"streamscale/ppo"
	"streamscale/ppo/policy"
	"streamscale/train/progress"
)

// ErrUsage marks errors in the options (exit status 2).
var ErrUsage = errors.New("train: usage")

// Options are the command's flags.
type Options struct {
	Env        string // "streamscale" or "cartpole"
	Profile    string // streamscale profile: "pred" or "etl"
	ProfileSet bool   // -profile was given explicitly
	Seed       uint64
	Steps      int    // 0: environment default
	Envs       int    // 0: environment default
	Out        string // "" → runs/<env>-seed<seed>
	Resume     bool
	JSON       bool
	Workers    int
}

// Files in the output directory.
const (
	CheckpointFile = "checkpoint.ckpt"
	CSVFile        = "progress.csv"
	ParquetFile    = "progress.parquet"
	SummaryFile    = "summary.json"
)

// Summary is what -json prints and summary.json holds.
type Summary struct {
	Env            string   `json:"env"`
	Profile        string   `json:"profile,omitempty"`
	Seed           uint64   `json:"seed"`
	Transitions    int      `json:"transitions"`
	Iterations     int      `json:"iterations"`
	Updates        int      `json:"updates"` // Adam steps
	WallSeconds    float64  `json:"wall_seconds"`
	SPS            float64  `json:"sps"`
	PolicyPath     string   `json:"policy_path"`
	PolicySHA256   string   `json:"policy_sha256"`
	EvalEpisodes   int      `json:"eval_episodes"`
	EvalMeanReturn *float64 `json:"eval_mean_return"`
	EvalStdReturn  *float64 `json:"eval_std_return"`
	BestDevReward  *float64 `json:"best_dev_reward"`
	ConfigHash     string   `json:"config_hash"`
	Commit         string   `json:"commit"`
	GoVersion      string   `json:"go_version"`
	Resumed        bool     `json:"resumed"`
}

// setup is everything Run needs, built and checked before any work.
type setup struct {
	o      Options
	cfg    ppo.Config
	venv   ppo.VecEnv
	spaces env.Spaces
	sim    Simulator // streamscale only
}

func (o *Options) check() error {
	switch o.Env {
	case "streamscale", "cartpole":
	default:
		return fmt.Errorf("%w: unknown -env %q (want streamscale or cartpole)", ErrUsage, o.Env)
	}
	if o.Env == "streamscale" && o.Profile != "pred" && o.Profile != "etl" {
		return fmt.Errorf("%w: unknown -profile %q (want pred or etl)", ErrUsage, o.Profile)
	}
	if o.Env == "cartpole" && o.ProfileSet {
		return fmt.Errorf("%w: -profile applies only to -env streamscale", ErrUsage)
	}
	if o.Steps < 0 {
		return fmt.Errorf("%w: -steps must be positive, got %d", ErrUsage, o.Steps)
	}
	if o.Envs < 0 {
		return fmt.Errorf("%w: -envs must be positive, got %d", ErrUsage, o.Envs)
	}
	if o.Workers < 0 || o.Workers > 2 {
		return fmt.Errorf("%w: -workers must be 0, 1 or 2, got %d", ErrUsage, o.Workers)
	}
	if o.Out == "" {
		o.Out = filepath.Join("runs", fmt.Sprintf("%s-seed%d", o.Env, o.Seed))
	}
	return nil
}

// probeDir creates dir and checks that a file can be written in it.
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: output directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("train: output directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func prepare(o Options) (*setup, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	s := &setup{o: o}
	switch o.Env {
	case "cartpole":
		s.cfg = CartPoleConfig()
	case "streamscale":
		s.cfg = ppo.DefaultConfig()
	}
	s.cfg.Seed = o.Seed
	if o.Steps > 0 {
		s.cfg.TotalTimesteps = o.Steps
	}
	if o.Envs > 0 {
		s.cfg.NumEnvs = o.Envs
	}
	if err := s.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if err := probeDir(o.Out); err != nil {
		return nil, err
	}
	if o.Resume {
		if _, err := os.Stat(filepath.Join(o.Out, CheckpointFile)); err != nil {
			return nil, fmt.Errorf("train: -resume: %w", err)
		}
	}
	switch o.Env {
	case "cartpole":
		v, err := newCartPoleVec(s.cfg.NumEnvs)
		if err != nil {
			return nil, err
		}
		s.venv, s.spaces = v, CartPoleSpaces()
	case "streamscale":
		sim, err := NewSimulator()
		if err != nil {
			return nil, err
		}
		if s.spaces, err = sim.Spaces(o.Profile); err != nil {
			return nil, err
		}
		if s.venv, err = sim.VecEnv(o.Profile, s.cfg.NumEnvs, o.Seed); err != nil {
			return nil, err
		}
		s.sim = sim
	}
	return s, nil
}

// Run trains as o says, writing into o.Out and reporting on stdout and
// stderr.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	s, err := prepare(o)
	if err != nil {
		return err
	}
	o = s.o
	start := time.Now()
	commit := gitCommit()

	// ---- progress writers ------------------------------------------------
	csvPath := filepath.Join(o.Out, CSVFile)
	var prior []progress.ParquetRow
	var resumeIter int
	var tr *ppo.Trainer
	// The logger and hook are bound below, once the resume point (which
	// decides how the progress files continue) is known.
	var loggers ppo.Loggers
	var hook func(context.Context, *ppo.Trainer, ppo.Stats) error
	opts := ppo.Options{
		Workers: o.Workers,
		Clock:   time.Now,
		Logger:  loggerFunc(func(st ppo.Stats) error { return loggers.Log(st) }),
		AfterIteration: func(ctx context.Context, t *ppo.Trainer, st ppo.Stats) error {
			return hook(ctx, t, st)
		},
	}
	if o.Resume {
		f, err := os.Open(filepath.Join(o.Out, CheckpointFile))
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		tr, err = ppo.Resume(s.cfg, s.venv, opts, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("train: resuming: %w", err)
		}
		resumeIter = tr.Iteration()
		if err := trimCSV(csvPath, resumeIter); err != nil {
			return err
		}
		prior = readPriorParquet(filepath.Join(o.Out, ParquetFile), resumeIter)
	} else {
		if tr, err = ppo.New(s.cfg, s.venv, opts); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !o.Resume {
		flags |= os.O_TRUNC
	}
	csvFile, err := os.OpenFile(csvPath, flags, 0o644)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	defer csvFile.Close()
	fi, _ := csvFile.Stat()
	var pq bytes.Buffer
	pqLog := progress.NewParquetLogger(&pq, prior)
	loggers = ppo.Loggers{progress.NewCSVLogger(csvFile, fi == nil || fi.Size() == 0), pqLog}
	if isTerminal(stderr) {
		loggers = append(loggers, progress.NewProgressBar(stderr, s.cfg.Iterations()))
	}

	// ---- per-iteration hook: model selection and checkpoint -------------
	sel := &selector{s: s}
	if o.Resume {
		if err := sel.restore(o.Out, s.cfg); err != nil {
			return err
		}
	}
	hook = func(ctx context.Context, t *ppo.Trainer, st ppo.Stats) error {
		improved, err := sel.consider(t)
		if err != nil {
			return err
		}
		// The best policy is saved before the checkpoint that follows it,
		// so a resumed run always finds the selection it continues.
		if improved {
			if err := sel.save(o.Out, s.cfg); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		if err := t.WriteCheckpoint(&buf); err != nil {
			return err
		}
		return writeAtomic(filepath.Join(o.Out, CheckpointFile), buf.Bytes())
	}

	// ---- train -----------------------------------------------------------
	learnErr := tr.Learn(ctx)
	if err := pqLog.Close(); err == nil {
		if werr := writeAtomic(filepath.Join(o.Out, ParquetFile), pq.Bytes()); werr != nil && learnErr == nil {
			learnErr = werr
		}
	} else if learnErr == nil {
		learnErr = err
	}
	if learnErr != nil {
		return fmt.Errorf("train: %w", learnErr)
	}
	wall := time.Since(start).Seconds()

	// ---- artifact --------------------------------------------------------
	pol, best := sel.result(tr)
	var wb bytes.Buffer
	sha, err := pol.WriteSafetensors(&wb)
	if err != nil {
		return err
	}
	card := ppo.NewCard(pol, s.cfg, sha)
	card.Name = filepath.Base(o.Out)
	card.Env, card.Spaces = o.Env, s.spaces
	if o.Env == "streamscale" {
		card.Profile = o.Profile
	}
	card.Transitions, card.GradientSteps = tr.Timesteps(), tr.GradientSteps()
	card.BestDevReward = best
	card.Commit, card.GoVersion = commit, runtime.Version()
	cb, err := json.MarshalIndent(card, "", "  ")
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	wPath := filepath.Join(o.Out, policy.FileName+".safetensors")
	if err := writeAtomic(wPath, wb.Bytes()); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(o.Out, policy.FileName+".json"), append(cb, '\n')); err != nil {
		return err
	}

	// ---- evaluation and summary ------------------------------------------
	sum := Summary{
		Env: o.Env, Seed: o.Seed, Transitions: tr.Timesteps(), Iterations: tr.Iteration(),
		Updates: tr.GradientSteps(), WallSeconds: round3(wall), PolicyPath: wPath, PolicySHA256: sha,
		BestDevReward: best, ConfigHash: s.cfg.Hash(), Commit: commit, GoVersion: runtime.Version(), Resumed: o.Resume,
	}
	if o.Env == "streamscale" {
		sum.Profile = o.Profile
	}
	if wall > 0 {
		sum.SPS = math.Round(float64(tr.Timesteps()-resumeTimesteps(s.cfg, resumeIter)) / wall)
	}
	if o.Env == "cartpole" {
		mean, std, err := EvalCartPole(pol, o.Seed, EvalEpisodes)
		if err != nil {
			return err
		}
		sum.EvalEpisodes, sum.EvalMeanReturn, sum.EvalStdReturn = EvalEpisodes, &mean, &std
	}
	sb, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := writeAtomic(filepath.Join(o.Out, SummaryFile), append(sb, '\n')); err != nil {
		return err
	}
	if o.JSON {
		_, err = fmt.Fprintf(stdout, "%s\n", sb)
		return err
	}
	line := fmt.Sprintf("train: %s seed %d: %d transitions, %d updates in %.1fs (%.0f sps); policy %s", o.Env, o.Seed, sum.Transitions, sum.Updates, sum.WallSeconds, sum.SPS, wPath)
	if sum.EvalMeanReturn != nil {
		line += fmt.Sprintf("; eval return %.1f ± %.1f over %d episodes", *sum.EvalMeanReturn, *sum.EvalStdReturn, EvalEpisodes)
	}
	_, err = fmt.Fprintln(stdout, line)
	return err
}

type loggerFunc func(ppo.Stats) error

func (f loggerFunc) Log(s ppo.Stats) error { return f(s) }

func resumeTimesteps(cfg ppo.Config, iter int) int { return iter * cfg.RolloutSize() }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// writeAtomic writes b to path through a temporary file and a rename.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// gitCommit is HEAD's hash, or "unknown" outside a repository or before
// the first commit.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// trimCSV drops rows after iteration iter (logged after the checkpoint
// the run resumes from).
func trimCSV(path string, iter int) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	col := -1
	var keep []string
	for i, l := range lines {
		if l == "" {
			continue
		}
		cells := strings.Split(strings.TrimRight(l, "\r\n"), ",")
		if i == 0 {
			for j, c := range cells {
				if c == "time/iterations" {
					col = j
				}
			}
			keep = append(keep, l)
			continue
		}
		var it int
		if col >= 0 && col < len(cells) {
			fmt.Sscan(cells[col], &it)
		}
		if it <= iter {
			keep = append(keep, l)
		}
	}
	return writeAtomic(path, []byte(strings.Join(keep, "")))
}

func readPriorParquet(path string, iter int) []progress.ParquetRow {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	rows, err := progress.ReadParquet(f, fi.Size())
	if err != nil {
		return nil
	}
	var keep []progress.ParquetRow
	for _, r := range rows {
		if int(r.Iterations) <= iter {
			keep = append(keep, r)
		}
	}
	return keep
}

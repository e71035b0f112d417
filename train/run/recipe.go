package run

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"streamscale/env"
	"streamscale/ppo"
	"streamscale/train/simvec"
)

// MaxRecipeBytes bounds a recipe file (-config).
const MaxRecipeBytes = 64 << 10

// Recipe is a training recipe: the train command's flags that decide what
// is trained, one field per flag, keyed by the flag's name (TOML in a
// -config file, JSON on the card). A nil field is not given. Values are
// those of the flag: strings for -env, -profile, -scenario, -select,
// -train-traces and -learning-rate ("3e-4", "lin_1e-3", "6e-4..3e-5"),
// arrays of numbers for -action-utilization, -action-deltas, -net-arch
// and -critic-arch, numbers and booleans for the rest. The flags that do
// not change the result (-workers, -gogc, -cpuprofile), and those of one
// invocation (-out, -resume, -force, -json, -progress, -seeds, -config),
// are not recipe keys.
//
// Profiles holds per-profile tables ([profiles.pred], [profiles.etl]):
// their keys apply when that profile is trained and win over the top
// level's; they may not set env or profile.
type Recipe struct {
	Env               *string           `toml:"env" json:"env,omitempty"`
	Profile           *string           `toml:"profile" json:"profile,omitempty"`
	Scenario          *string           `toml:"scenario" json:"scenario,omitempty"`
	Randomize         *bool             `toml:"randomize" json:"randomize,omitempty"`
	TrainPlacements   *int              `toml:"train-placements" json:"train-placements,omitempty"`
	Select            *string           `toml:"select" json:"select,omitempty"`
	ActionUtilization []float64         `toml:"action-utilization,omitempty" json:"action-utilization,omitempty"`
	ActionDeltas      []float64         `toml:"action-deltas,omitempty" json:"action-deltas,omitempty"`
	RewardSpan        *float64          `toml:"reward-span" json:"reward-span,omitempty"`
	TrainTraces       *string           `toml:"train-traces" json:"train-traces,omitempty"`
	Seed              *uint64           `toml:"seed" json:"seed,omitempty"`
	Steps             *int              `toml:"steps" json:"steps,omitempty"`
	Envs              *int              `toml:"envs" json:"envs,omitempty"`
	NormObs           *bool             `toml:"norm-obs" json:"norm-obs,omitempty"`
	NormReward        *bool             `toml:"norm-reward" json:"norm-reward,omitempty"`
	EntCoef           *float64          `toml:"ent-coef" json:"ent-coef,omitempty"`
	ClipRangeVF       *float64          `toml:"clip-range-vf" json:"clip-range-vf,omitempty"`
	Gamma             *float64          `toml:"gamma" json:"gamma,omitempty"`
	GAELambda         *float64          `toml:"gae-lambda" json:"gae-lambda,omitempty"`
	VFCoef            *float64          `toml:"vf-coef" json:"vf-coef,omitempty"`
	LearningRate      *string           `toml:"learning-rate" json:"learning-rate,omitempty"`
	NEpochs           *int              `toml:"n-epochs" json:"n-epochs,omitempty"`
	TargetKL          *float64          `toml:"target-kl" json:"target-kl,omitempty"`
	BatchSize         *int              `toml:"batch-size" json:"batch-size,omitempty"`
	NetArch           []int             `toml:"net-arch,omitempty" json:"net-arch,omitempty"`
	CriticArch        []int             `toml:"critic-arch,omitempty" json:"critic-arch,omitempty"`
	Residual          *string           `toml:"residual" json:"residual,omitempty"`
	Objective         *string           `toml:"objective" json:"objective,omitempty"`
	FirstLogitBias    *float64          `toml:"first-logit-bias" json:"first-logit-bias,omitempty"`
	ResidualContext   *string           `toml:"residual-context" json:"residual-context,omitempty"`
	Profiles          map[string]Recipe `toml:"profiles" json:"-"`
}

// Flags returns the recipe's given keys as flag name and value in the
// flag's own syntax (what -name would be given), in the order of Recipe's
// fields; Profiles is left out.
func (r Recipe) Flags() [][2]string {
	var out [][2]string
	add := func(name, v string) { out = append(out, [2]string{name, v}) }
	str := func(name string, v *string) {
		if v != nil {
			add(name, *v)
		}
	}
	flt := func(name string, v *float64) {
		if v != nil {
			add(name, strconv.FormatFloat(*v, 'g', -1, 64))
		}
	}
	integer := func(name string, v *int) {
		if v != nil {
			add(name, strconv.Itoa(*v))
		}
	}
	boolean := func(name string, v *bool) {
		if v != nil {
			add(name, strconv.FormatBool(*v))
		}
	}
	floats := func(name string, v []float64) {
		if v != nil {
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = strconv.FormatFloat(x, 'g', -1, 64)
			}
			add(name, strings.Join(s, ","))
		}
	}
	ints := func(name string, v []int) {
		if v != nil {
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = strconv.Itoa(x)
			}
			add(name, strings.Join(s, ","))
		}
	}
	str("env", r.Env)
	str("profile", r.Profile)
	str("scenario", r.Scenario)
	boolean("randomize", r.Randomize)
	integer("train-placements", r.TrainPlacements)
	str("select", r.Select)
	floats("action-utilization", r.ActionUtilization)
	floats("action-deltas", r.ActionDeltas)
	flt("reward-span", r.RewardSpan)
	str("train-traces", r.TrainTraces)
	if r.Seed != nil {
		add("seed", strconv.FormatUint(*r.Seed, 10))
	}
	integer("steps", r.Steps)
	integer("envs", r.Envs)
	boolean("norm-obs", r.NormObs)
	boolean("norm-reward", r.NormReward)
	flt("ent-coef", r.EntCoef)
	flt("clip-range-vf", r.ClipRangeVF)
	flt("gamma", r.Gamma)
	flt("gae-lambda", r.GAELambda)
	flt("vf-coef", r.VFCoef)
	str("learning-rate", r.LearningRate)
	integer("n-epochs", r.NEpochs)
	flt("target-kl", r.TargetKL)
	integer("batch-size", r.BatchSize)
	ints("net-arch", r.NetArch)
	ints("critic-arch", r.CriticArch)
	str("residual", r.Residual)
	str("objective", r.Objective)
	flt("first-logit-bias", r.FirstLogitBias)
	str("residual-context", r.ResidualContext)
	return out
}

// RecipeKeys are the keys a recipe may hold (Recipe's fields but
// Profiles), in Recipe's order.
var RecipeKeys = []string{
	"env", "profile", "scenario", "randomize", "train-placements", "select", "action-utilization", "action-deltas",
	"reward-span", "train-traces", "seed", "steps", "envs", "norm-obs", "norm-reward", "ent-coef", "clip-range-vf",
	"gamma", "gae-lambda", "vf-coef", "learning-rate", "n-epochs", "target-kl", "batch-size", "net-arch", "critic-arch",
	"residual", "objective", "first-logit-bias", "residual-context",
}

// RecipeFile is a recipe read from a file, with where it came from.
type RecipeFile struct {
	Recipe Recipe
	Path   string // as given to -config
	SHA256 string // hex SHA-256 of the file's bytes
}

// ReadRecipe reads a recipe file: a regular file of at most
// MaxRecipeBytes holding TOML whose keys are RecipeKeys and the
// [profiles.pred] and [profiles.etl] tables. An unknown key, a repeated
// key or a value of the wrong type is an error naming the key and line.
func ReadRecipe(path string) (RecipeFile, error) {
	fail := func(format string, a ...any) (RecipeFile, error) {
		return RecipeFile{}, fmt.Errorf("train: -config %s: "+format, append([]any{path}, a...)...)
	}
	f, err := os.Open(path)
	if err != nil {
		return RecipeFile{}, fmt.Errorf("train: -config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return RecipeFile{}, fmt.Errorf("train: -config: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fail("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxRecipeBytes+1))
	if err != nil {
		return RecipeFile{}, fmt.Errorf("train: -config: %w", err)
	}
	if len(b) > MaxRecipeBytes {
		return fail("larger than the limit of %d bytes", MaxRecipeBytes)
	}
	r, err := DecodeRecipe(b)
	if err != nil {
		return fail("%v", err)
	}
	sum := sha256.Sum256(b)
	return RecipeFile{Recipe: r, Path: path, SHA256: hex.EncodeToString(sum[:])}, nil
}

// DecodeRecipe decodes a recipe's TOML strictly (see ReadRecipe). The
// error names the offending key and its line.
func DecodeRecipe(b []byte) (Recipe, error) {
	var r Recipe
	if err := decodeStrict(b, &r); err != nil {
		var strict *toml.StrictMissingError
		var de *toml.DecodeError
		switch {
		case errors.As(err, &strict) && len(strict.Errors) > 0:
			e := strict.Errors[0]
			line, _ := e.Position()
			return Recipe{}, fmt.Errorf("unknown key %q (line %d); the keys are the flag names: %s and [profiles.pred], [profiles.etl]", strings.Join(e.Key(), "."), line, strings.Join(RecipeKeys, ", "))
		case errors.As(err, &de):
			line, _ := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			if before, typ, ok := strings.Cut(msg, " into struct field "); ok {
				// "cannot decode TOML string into struct field run.Recipe.NEpochs of type *int"
				_, typ, _ = strings.Cut(typ, " of type ")
				msg = strings.TrimPrefix(before, "cannot decode ") + " value, want " + goTypeWant[typ]
			} else if strings.HasSuffix(msg, "cannot be assigned to int") {
				msg += "eger"
			}
			k := strings.Join(de.Key(), ".")
			if k == "" {
				k = keyOnLine(b, line)
			}
			if k != "" {
				return Recipe{}, fmt.Errorf("key %q (line %d): %s", k, line, msg)
			}
			return Recipe{}, fmt.Errorf("line %d: %s", line, msg)
		}
		return Recipe{}, err
	}
	names := make([]string, 0, len(r.Profiles))
	for p := range r.Profiles {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		t := r.Profiles[p]
		switch {
		case p != "pred" && p != "etl":
			return Recipe{}, fmt.Errorf("table [profiles.%s]: unknown profile, want pred or etl", p)
		case t.Env != nil || t.Profile != nil:
			return Recipe{}, fmt.Errorf("table [profiles.%s] sets env or profile; a profile table holds the keys that differ for that profile", p)
		case t.Profiles != nil:
			return Recipe{}, fmt.Errorf("table [profiles.%s] holds a profiles table", p)
		}
	}
	return r, nil
}

// decodeStrict decodes b into r refusing unknown keys. go-toml v2.2.4
// panics on some documents that give a table where a Recipe field is a
// scalar (e.g. "[profile.0]", found by FuzzDecodeRecipe); that panic is
// bad input, returned as an error.
func decodeStrict(b []byte, r *Recipe) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed recipe: a table or key where a value belongs (toml: %v)", p)
		}
	}()
	return toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields().Decode(r)
}

// goTypeWant names a Recipe field's type for an error.
var goTypeWant = map[string]string{
	"*int": "an integer", "*uint64": "a non-negative integer", "*float64": "a number", "*string": "a string",
	"*bool": "true or false", "[]float64": "an array of numbers", "[]int": "an array of integers",
	"map[string]run.Recipe": "a table",
}

// keyOnLine is the key of a "key = value" line (1-based) of b, or "".
func keyOnLine(b []byte, line int) string {
	lines := strings.Split(string(b), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	k, _, ok := strings.Cut(lines[line-1], "=")
	if !ok {
		return ""
	}
	return strings.Trim(strings.TrimSpace(k), `"'`)
}

// Resolved is the recipe every option of o amounts to, each key with the
// value the run uses (defaults filled in from cfg, the run's resolved
// ppo.Config): given to -config, it trains the same run.
func (o Options) Resolved(cfg ppo.Config) Recipe {
	r := Recipe{Env: ptr(o.Env), Seed: ptr(o.Seed), Steps: ptr(cfg.TotalTimesteps), Envs: ptr(cfg.NumEnvs),
		NormObs: ptr(cfg.NormObs), NormReward: ptr(cfg.NormReward), EntCoef: ptr(cfg.EntCoef), ClipRangeVF: ptr(cfg.ClipRangeVF),
		Gamma: ptr(cfg.Gamma), GAELambda: ptr(cfg.Lambda), VFCoef: ptr(cfg.VFCoef), LearningRate: ptr(cfg.LearningRate.String()),
		NEpochs: ptr(cfg.Epochs), BatchSize: ptr(cfg.BatchSize), NetArch: slices.Clone(cfg.Hidden), CriticArch: slices.Clone(cfg.CriticHidden)}
	if cfg.TargetKL > 0 {
		r.TargetKL = ptr(cfg.TargetKL) // absent when off, as SB3's None
	}
	if o.Env != "streamscale" {
		return r
	}
	sel := "best-dev"
	if o.SelectLast {
		sel = "last"
	}
	r.Profile, r.Scenario, r.Randomize, r.Select = ptr(o.Profile), ptr(o.Scenario), ptr(o.Randomize), ptr(sel)
	r.TrainPlacements = ptr(o.TrainPlacements)
	if o.TrainPlacements == 0 {
		r.TrainPlacements = ptr(len(simvec.TrainingPlacements))
	}
	if o.ActionUtilization != ([5]float64{}) {
		r.ActionUtilization = slices.Clone(o.ActionUtilization[:])
	} else {
		d := o.ActionDeltas
		if d == ([5]float64{}) {
			d = env.DeltaMillicores
		}
		r.ActionDeltas = slices.Clone(d[:])
	}
	span := o.RewardSpan
	if span == 0 {
		span = env.DefaultReward().SpanPerTask
	}
	r.RewardSpan = &span
	variants := o.TrainTraces
	if variants == nil {
		variants = simvec.PaperTraces
	}
	parts := make([]string, len(variants))
	for i, v := range variants {
		parts[i] = v.String()
	}
	r.TrainTraces = ptr(strings.Join(parts, ","))
	if o.Residual != "" {
		r.Residual = ptr(o.Residual)
		r.FirstLogitBias = ptr(cfg.FirstLogitBias)
		if o.ResidualContext != "" {
			r.ResidualContext = ptr(o.ResidualContext)
		}
	}
	if o.Objective != "" {
		r.Objective = ptr(o.Objective)
	}
	return r
}

func ptr[T any](v T) *T { return &v }

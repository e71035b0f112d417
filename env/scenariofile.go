package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
)

// ScenarioFileVersion is the version of the scenario file format that
// ParseScenario reads and Scenario.MarshalFile writes.
const ScenarioFileVersion = 1

// MaxScenarioFile bounds a scenario file, bytes (1 MiB; the files eval
// calibrate writes are a few kB). ParseScenario refuses longer data, and
// the commands read a scenario file as a regular file of at most this
// size (internal/regfile).
const MaxScenarioFile = 1 << 20

// Scenario is a simulator scenario: a physics preset, optionally
// overridden field by field and with measured per-task demands, as a
// scenario file gives it (`eval calibrate` writes one from the live
// runtime). The zero Scenario is invalid; ResolveScenario and
// ParseScenario build them.
//
// The file is JSON, decoded strictly (an unknown field anywhere, a second
// value or a value out of range is an error naming the field):
//
//	{
//	  "version": 1,                    // ScenarioFileVersion, required
//	  "base": "realistic",             // preset the physics start from, required
//	  "comment": "…",                  // free text
//	  "physics": {"service_cv": 0.4},  // overrides of any Physics field (its JSON name);
//	                                   // "hop_ms_by_task": {"SenMLParse": 3.1} is an object of task → ms
//	  "notes": {"service_cv": "…"},    // how each value was obtained; keys: Physics fields, "demand", "cost_model"
//	  "demand": {…},                   // optional: ScenarioDemand
//	  "cost_model": {…}                // optional: ScenarioCostModel
//	}
type Scenario struct {
	// Name is the preset name or the file's path (ResolveScenario), as
	// results record it.
	Name string `json:"-"`
	// Base is the preset the physics start from.
	Base string
	// Comment is free text.
	Comment string
	// Physics are the base preset's physics with the file's overrides.
	Physics Physics
	// Notes say how values were obtained, keyed by Physics JSON field
	// name, "demand" or "cost_model".
	Notes map[string]string
	// Demand, if not nil, replaces catalogue demands (Apply).
	Demand *ScenarioDemand
	// CostModel, if not nil, is CLASP's measured cost model of chained
	// requests; recorded for the horizontal scenarios' users, Apply does
	// not read it.
	CostModel *ScenarioCostModel
}

// ScenarioDemand replaces the catalogue processing demand h_k of tasks of
// one profile with a measured CPU time per event. The mapping to the
// simulator's units: live, a task allotted A scenario millicores runs on
// A·CPUScale/1000 cores, so an event of u µs of CPU takes
// u·10⁻⁶/(A·CPUScale/1000) s; in the simulator a task of A millicores on
// server i processes (MIPS per core of i)·A/1000 MIPS, so an event of h MI
// takes h/((MIPS per core of i)·A/1000) s. Equal service times at every
// allocation give
//
//	h_k = u_k · 10⁻⁶ · (MIPS per core of k's server) / CPUScale  [MI],
//
// which depends on the placement (the live host is homogeneous, the
// simulated servers are not): Apply uses the server of the task's first
// replica.
type ScenarioDemand struct {
	// Profile is the application profile the tasks belong to ("pred",
	// "etl"); Apply refuses a configuration of another application.
	Profile string `json:"profile"`
	// CPUScale is the live millicores per scenario millicore of the
	// measurement (`eval live -cpu-scale`), in (0, 1000].
	CPUScale float64 `json:"cpu_scale"`
	// Tasks are the measured tasks (unlisted ones keep the catalogue's
	// demand); names unique and of the profile.
	Tasks []MeasuredDemand `json:"tasks"`
}

// MeasuredDemand is one task's measured CPU time per input event.
type MeasuredDemand struct {
	Task string `json:"task"`
	// CPUUSPerEvent is the CPU time per event on the live host, µs, in
	// (0, 10⁶].
	CPUUSPerEvent float64 `json:"cpu_us_per_event"`
	// Comment says how it was measured.
	Comment string `json:"comment,omitempty"`
}

// ScenarioCostModel is CLASP's capacity model of a worker (CLASP Eq. 1:
// W = Σ_o N_o·τ̄_o + α·R^l + β·R^r + γ·δ), µs.
type ScenarioCostModel struct {
	AlphaUS float64 `json:"alpha_us"` // per local request, ≥ 0
	BetaUS  float64 `json:"beta_us"`  // per remote request, ≥ 0
	GammaUS float64 `json:"gamma_us"` // per distinct remote destination per second, ≥ 0
	// BudgetUSPerS is W̄, the work a worker completes per second, µs/s, > 0.
	BudgetUSPerS float64 `json:"budget_us_per_s"`
	// Samples is how many saturated samples the estimate rests on, ≥ 0.
	Samples int `json:"samples"`
}

// scenarioFile is the wire form of a Scenario.
type scenarioFile struct {
	Version   *int               `json:"version"`
	Base      string             `json:"base"`
	Comment   string             `json:"comment,omitempty"`
	Physics   json.RawMessage    `json:"physics,omitempty"`
	Notes     map[string]string  `json:"notes,omitempty"`
	Demand    *ScenarioDemand    `json:"demand,omitempty"`
	CostModel *ScenarioCostModel `json:"cost_model,omitempty"`
}

// ResolveScenario returns the scenario arg names: a preset name
// (Scenarios) or the path of a scenario file, read with read (in the
// commands regfile.Reader(MaxScenarioFile): a regular file of at most
// MaxScenarioFile bytes; env itself does no I/O). An argument that is
// neither is an error naming it.
func ResolveScenario(arg string, read func(string) ([]byte, error)) (Scenario, error) {
	if IsScenario(arg) {
		p, err := ScenarioPhysics(arg)
		return Scenario{Name: arg, Base: arg, Physics: p}, err
	}
	if arg == "" || read == nil {
		return Scenario{}, fmt.Errorf("env: scenario %q is not a preset (%s)", arg, strings.Join(Scenarios(), " or "))
	}
	data, err := read(arg)
	if err != nil {
		return Scenario{}, fmt.Errorf("env: scenario %q is neither a preset (%s) nor a readable scenario file: %w", arg, strings.Join(Scenarios(), " or "), err)
	}
	s, err := ParseScenario(data)
	if err != nil {
		return Scenario{}, fmt.Errorf("env: scenario file %s: %w", arg, err)
	}
	s.Name = arg
	return s, nil
}

// ParseScenario decodes and validates a scenario file.
func ParseScenario(data []byte) (Scenario, error) {
	if len(data) > MaxScenarioFile {
		return Scenario{}, fmt.Errorf("env: scenario file of %d bytes, want at most %d", len(data), MaxScenarioFile)
	}
	var f scenarioFile
	if err := decodeStrict(data, &f); err != nil {
		return Scenario{}, fmt.Errorf("env: scenario file: %w", err)
	}
	if f.Version == nil {
		return Scenario{}, errors.New("env: scenario file: version missing, want 1")
	}
	if *f.Version != ScenarioFileVersion {
		return Scenario{}, fmt.Errorf("env: scenario file: version %d, want %d", *f.Version, ScenarioFileVersion)
	}
	if !IsScenario(f.Base) {
		return Scenario{}, fmt.Errorf("env: scenario file: base %q, want %s", f.Base, strings.Join(Scenarios(), " or "))
	}
	p, err := ScenarioPhysics(f.Base)
	if err != nil {
		return Scenario{}, err
	}
	if len(f.Physics) > 0 && !bytes.Equal(bytes.TrimSpace(f.Physics), []byte("null")) {
		if err := decodeStrict(f.Physics, &p); err != nil {
			return Scenario{}, fmt.Errorf("env: scenario file: physics: %w", err)
		}
	}
	// The episode length is not known here; New checks the delays
	// against it.
	if err := p.validate(math.MaxInt); err != nil {
		return Scenario{}, fmt.Errorf("env: scenario file: %w", err)
	}
	if len(f.Notes) == 0 {
		f.Notes = nil // "notes": {} is no notes
	}
	s := Scenario{Base: f.Base, Comment: f.Comment, Physics: p, Notes: f.Notes, Demand: f.Demand, CostModel: f.CostModel}
	if err := s.validateParts(); err != nil {
		return Scenario{}, err
	}
	return s, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields
// and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// physicsFields lists the JSON names of Physics' fields.
func physicsFields() []string {
	t := reflect.TypeFor[Physics]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// validateParts checks the notes, demand and cost model.
func (s Scenario) validateParts() error {
	fields := physicsFields()
	for k := range s.Notes {
		if !slices.Contains(fields, k) && k != "demand" && k != "cost_model" {
			return fmt.Errorf("env: scenario file: notes key %q, want a physics field (%s), demand or cost_model", k, strings.Join(fields, ", "))
		}
	}
	if d := s.Demand; d != nil {
		app, err := Profile(d.Profile)
		if err != nil {
			return fmt.Errorf("env: scenario file: demand profile: %w", err)
		}
		if !(d.CPUScale > 0 && d.CPUScale <= 1000) {
			return fmt.Errorf("env: scenario file: demand cpu_scale %v, want 0 < scale ≤ 1000", d.CPUScale)
		}
		if len(d.Tasks) == 0 {
			return errors.New("env: scenario file: demand has no tasks")
		}
		seen := map[string]bool{}
		for i, t := range d.Tasks {
			if !slices.ContainsFunc(app.Tasks, func(a Task) bool { return a.Name == t.Task }) {
				return fmt.Errorf("env: scenario file: demand tasks[%d] task %q is not a task of %s", i, t.Task, app.Name)
			}
			if seen[t.Task] {
				return fmt.Errorf("env: scenario file: demand tasks[%d] task %q given twice", i, t.Task)
			}
			seen[t.Task] = true
			if !(t.CPUUSPerEvent > 0 && t.CPUUSPerEvent <= 1e6) {
				return fmt.Errorf("env: scenario file: demand tasks[%d] (%s) cpu_us_per_event %v, want 0 < µs ≤ 1e6", i, t.Task, t.CPUUSPerEvent)
			}
		}
	}
	if m := s.CostModel; m != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"alpha_us", m.AlphaUS}, {"beta_us", m.BetaUS}, {"gamma_us", m.GammaUS}} {
			if !(f.v >= 0 && f.v <= 1e9) {
				return fmt.Errorf("env: scenario file: cost_model %s %v, want 0 ≤ µs ≤ 1e9", f.name, f.v)
			}
		}
		if !(m.BudgetUSPerS > 0 && m.BudgetUSPerS <= 1e9) {
			return fmt.Errorf("env: scenario file: cost_model budget_us_per_s %v, want 0 < µs/s ≤ 1e9", m.BudgetUSPerS)
		}
		if m.Samples < 0 {
			return fmt.Errorf("env: scenario file: cost_model samples %d, want ≥ 0", m.Samples)
		}
	}
	return nil
}

// MarshalFile encodes s as a scenario file that ParseScenario reads back
// to the same Base, Physics, Notes, Demand and CostModel: the physics as
// the fields that differ from the base preset's (zero values written
// out).
func (s Scenario) MarshalFile() ([]byte, error) {
	base, err := ScenarioPhysics(s.Base)
	if err != nil {
		return nil, err
	}
	if err := s.Physics.validate(math.MaxInt); err != nil {
		return nil, err
	}
	if err := s.validateParts(); err != nil {
		return nil, err
	}
	// Every field by its JSON name, without omitempty, in field order.
	var over bytes.Buffer
	over.WriteByte('{')
	pv, bv := reflect.ValueOf(s.Physics), reflect.ValueOf(base)
	for i, name := range physicsFields() {
		if pv.Field(i).Equal(bv.Field(i)) {
			continue
		}
		v, err := json.Marshal(pv.Field(i).Interface())
		if err != nil {
			return nil, err
		}
		if over.Len() > 1 {
			over.WriteByte(',')
		}
		fmt.Fprintf(&over, "%q:%s", name, v)
	}
	over.WriteByte('}')
	v := ScenarioFileVersion
	f := scenarioFile{Version: &v, Base: s.Base, Comment: s.Comment, Notes: s.Notes, Demand: s.Demand, CostModel: s.CostModel}
	if over.Len() > 2 {
		f.Physics = over.Bytes()
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Apply sets cfg's physics to s's and, with a Demand, the processing
// demand of every listed task (ScenarioDemand's mapping, on the server of
// the task's first replica). cfg must be placed (EdgeConfig or a
// horizontal scenario); an application other than the demand's profile
// is an error and leaves cfg unchanged, as is a per-task hop
// (Physics.HopMSByTask) naming a task the application does not have. The
// task list is copied, so a shared App is not modified.
func (s Scenario) Apply(cfg *Config) error {
	if err := s.Physics.checkTasks(cfg.App); err != nil {
		return err
	}
	if s.Demand == nil {
		cfg.Physics = s.Physics
		return nil
	}
	d := s.Demand
	if !strings.EqualFold(cfg.App.Name, d.Profile) {
		return fmt.Errorf("env: scenario demand is for profile %s, not %s", d.Profile, cfg.App.Name)
	}
	plan := cfg.replicaSets()
	tasks := slices.Clone(cfg.App.Tasks)
	for _, td := range d.Tasks {
		k := slices.IndexFunc(tasks, func(t Task) bool { return t.Name == td.Task })
		if k < 0 || k >= len(plan) || len(plan[k]) == 0 {
			return fmt.Errorf("env: scenario demand task %q is not placed in %s", td.Task, cfg.App.Name)
		}
		sv := plan[k][0].Server
		if sv < 0 || sv >= len(cfg.Servers) || !(cfg.Servers[sv].CPU > 0) {
			return fmt.Errorf("env: scenario demand task %q on server %d, which does not exist", td.Task, sv)
		}
		mipsPerCore := cfg.Servers[sv].MIPS / (cfg.Servers[sv].CPU / 1000)
		tasks[k].MIPSPerEvent = td.CPUUSPerEvent * 1e-6 * mipsPerCore / d.CPUScale
	}
	cfg.App.Tasks = tasks
	cfg.Physics = s.Physics
	return nil
}

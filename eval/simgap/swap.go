package simgap

import (
	"errors"
	"fmt"
	"strings"

	"streamscale/env"
	"streamscale/ppo/policy"
)

// SwapGroups are the feature groups Swap exchanges between the worlds, by
// the suffix of env.FeatureNames' names ("all" is every feature). Each
// names what a real system measures differently from the simulator in its
// own way.
var SwapGroups = []SwapGroup{
	{"queues", []string{"/queue", "/queue_pressure", "/queue_change", "app/total_queue"}},
	{"utilisation", []string{"/demand_per_cpu", "/proc_latency"}},
	{"latencies", []string{"/latency", "/latency_change", "app/mean_latency", "app/p95_latency", "app/slo_margin", "app/p95_trend", "app/violation_history"}},
	{"ratios", []string{"/throughput_ratio", "/io_ratio"}},
	{"rates", []string{"/input_rate", "/demand", "/throughput"}},
	{"allocations", []string{"/cpu", "/host_cpu_util", "/host_free_cpu", "/cpu_util", "/free_cpu", "/mem_util", "/free_mem", "/task_count", "app/total_cpu", "app/mean_cpu", "app/max_cpu", "app/min_cpu"}},
	{"all", nil},
}

// SwapGroup is a named set of features: those whose names end in one of
// Suffixes (nil: every feature).
type SwapGroup struct {
	Name     string
	Suffixes []string
}

// has reports whether feature f belongs to g.
func (g SwapGroup) has(f string) bool {
	if g.Suffixes == nil {
		return true
	}
	for _, s := range g.Suffixes {
		if strings.HasSuffix(f, s) {
			return true
		}
	}
	return false
}

// SwapRow is one world and group of Swap: what the policy chose on that
// world's observations with the group's features taken from the other
// world at the same placement and interval. Per task: the mean of the
// chosen target utilisation's inverse over the choices that are not
// "hold" (the allocation the choice asks for, relative to the demand; a
// delta action set reports the mean delta, millicores) and the share of
// holds.
type SwapRow struct {
	World string    `json:"world"`
	Swap  string    `json:"swap"` // "none" or a group
	Mean  []float64 `json:"mean"`
	Hold  []float64 `json:"hold"`
}

// SwapReport is `eval obsswap -json`.
type SwapReport struct {
	Controller string    `json:"controller"`
	Policy     string    `json:"policy"`
	Statistic  string    `json:"statistic"` // what Mean holds
	Tasks      []string  `json:"tasks"`
	Intervals  int       `json:"intervals"` // per world
	Rows       []SwapRow `json:"rows"`
}

// ErrNoObservations is Swap's error when the rows hold no observation of
// the controller asked for.
var ErrNoObservations = errors.New("simgap: no observations of controller")

// obsKey names one observation: world, placement, interval.
type obsKey struct {
	world     string
	placement int64
	step      int64
}

// obsTable is the observations of one controller, in file order.
type obsTable struct {
	names []string
	obs   map[obsKey][]float64
	keys  []obsKey
}

// complete reports whether k's observation and its counterpart in the
// other world are recorded whole.
func (t *obsTable) complete(k obsKey) bool {
	src, ok := t.obs[obsKey{other(k.world), k.placement, k.step}]
	return ok && len(src) == len(t.names) && len(t.obs[k]) == len(t.names)
}

// readTable collects ctrl's rows: features in the order of their first
// row, every observation's features in that order.
func readTable(rows []ObsRow, ctrl string) (*obsTable, error) {
	t := &obsTable{obs: map[obsKey][]float64{}}
	index := map[string]int{}
	for _, r := range rows {
		if r.Controller != ctrl {
			continue
		}
		if r.World != WorldLive && r.World != WorldSim {
			return nil, fmt.Errorf("simgap: observations: world %q, want live or sim", r.World)
		}
		i, ok := index[r.Feature]
		if !ok {
			i = len(t.names)
			index[r.Feature] = i
			t.names = append(t.names, r.Feature)
		}
		k := obsKey{r.World, r.Placement, r.Step}
		o, ok := t.obs[k]
		if !ok {
			t.keys = append(t.keys, k)
		}
		if i != len(o) {
			return nil, fmt.Errorf("simgap: observations: %s placement %d interval %d: feature %q out of order", r.World, r.Placement, r.Step, r.Feature)
		}
		t.obs[k] = append(o, r.Value)
	}
	if len(t.keys) == 0 {
		return nil, fmt.Errorf("%w %q in the file", ErrNoObservations, ctrl)
	}
	return t, nil
}

// Swap asks policy p (deterministic) on the recorded observations of
// controller ctrl (rows of observations.parquet), skipping each run's
// first skip intervals: for each world and each of "none" and SwapGroups,
// the world's observations with the group's features taken from the other
// world at the same placement and interval. Only intervals recorded in
// both worlds count. A group whose swap moves the live choices to the
// simulated ones (and back) is what the policy reacts to.
func Swap(p *policy.Policy, card *policy.Card, rows []ObsRow, ctrl string, skip int) (SwapReport, error) {
	t, err := readTable(rows, ctrl)
	if err != nil {
		return SwapReport{}, err
	}
	if len(t.names) != p.ObsSize() {
		return SwapReport{}, fmt.Errorf("simgap: the observations have %d features, the policy %d", len(t.names), p.ObsSize())
	}
	var tasks []string
	for _, f := range t.names {
		if name, ok := strings.CutSuffix(f, "/cpu"); ok && !strings.HasPrefix(f, "app/") && !strings.HasPrefix(f, "server") {
			tasks = append(tasks, name)
		}
	}
	if len(tasks) != len(card.Spaces.Nvec) {
		return SwapReport{}, fmt.Errorf("simgap: the observations name %d tasks, the policy acts on %d", len(tasks), len(card.Spaces.Nvec))
	}
	rep := SwapReport{Controller: ctrl, Statistic: "mean 1/target utilisation of the non-hold choices", Tasks: tasks}
	if card.Spaces.TargetUtilization == nil {
		rep.Statistic = "mean delta of the non-hold choices, millicores"
	}
	var per [2]int
	for _, k := range t.keys {
		if int(k.step) >= skip && t.complete(k) {
			per[worldIndex(k.world)]++
		}
	}
	rep.Intervals = min(per[0], per[1])
	if rep.Intervals == 0 {
		return SwapReport{}, fmt.Errorf("simgap: no interval of controller %q is recorded in both worlds past the skipped %d", ctrl, skip)
	}
	groups := append([]SwapGroup{{"none", []string{}}}, SwapGroups...)
	for _, world := range []string{WorldLive, WorldSim} {
		for _, g := range groups {
			row, err := swapRow(p, card, t, world, g, skip)
			if err != nil {
				return SwapReport{}, err
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}

// swapRow is Swap's row of one world and group.
func swapRow(p *policy.Policy, card *policy.Card, t *obsTable, world string, g SwapGroup, skip int) (SwapRow, error) {
	nt := len(card.Spaces.Nvec)
	util, deltas := card.Spaces.TargetUtilization, card.Spaces.DeltaMillicores
	row := SwapRow{World: world, Swap: g.Name, Mean: make([]float64, nt), Hold: make([]float64, nt)}
	cnt := make([]float64, nt)
	act := make([]int, nt)
	x := make([]float64, len(t.names))
	n := 0.0
	for _, k := range t.keys {
		if k.world != world || int(k.step) < skip || !t.complete(k) {
			continue
		}
		src := t.obs[obsKey{other(world), k.placement, k.step}]
		copy(x, t.obs[k])
		for i, f := range t.names {
			if g.Name != "none" && g.has(f) {
				x[i] = src[i]
			}
		}
		if _, err := p.Act(x, true, nil, act); err != nil {
			return SwapRow{}, fmt.Errorf("simgap: policy: %w", err)
		}
		n++
		for i, a := range act {
			var v float64
			hold := a == env.NoChange
			if util != nil {
				hold = util[a] == 0
				if !hold {
					v = 1 / util[a]
				}
			} else if !hold {
				v = deltas[a]
			}
			if hold {
				row.Hold[i]++
			} else {
				row.Mean[i] += v
				cnt[i]++
			}
		}
	}
	for i := range row.Mean {
		if cnt[i] > 0 {
			row.Mean[i] /= cnt[i]
		}
		row.Hold[i] /= n
	}
	return row, nil
}

// SwapMarkdown renders the report as a table: one row per world and swap,
// one column per task ("mean (hold share)").
func SwapMarkdown(r SwapReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Observation swap: %s\n\n", r.Controller)
	fmt.Fprintf(&b, "Policy %s, deterministic; %d intervals per world. Each cell: %s (share of holds), on that world's observations with the group's features taken from the other world at the same placement and interval. Groups: ", r.Policy, r.Intervals, r.Statistic)
	for i, g := range SwapGroups {
		if i > 0 {
			b.WriteString("; ")
		}
		if g.Suffixes == nil {
			fmt.Fprintf(&b, "%s (every feature)", g.Name)
		} else {
			fmt.Fprintf(&b, "%s (%s)", g.Name, strings.Join(g.Suffixes, ", "))
		}
	}
	b.WriteString(".\n\n| world | swapped |")
	for _, t := range r.Tasks {
		fmt.Fprintf(&b, " %s |", t)
	}
	b.WriteString("\n|---|---|")
	for range r.Tasks {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s |", row.World, row.Swap)
		for t := range r.Tasks {
			fmt.Fprintf(&b, " %.2f (%.2f) |", row.Mean[t], row.Hold[t])
		}
		b.WriteString("\n")
	}
	return b.String()
}

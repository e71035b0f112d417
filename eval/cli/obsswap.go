package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"streamscale/env"
	"streamscale/internal/command"
	"streamscale/ppo/policy"
)

// swapGroups are the feature groups `eval obsswap` exchanges between the
// worlds, by the suffix of env.FeatureNames' names ("all" is every
// feature). Each names what a real system measures differently from the
// simulator in its own way.
var swapGroups = []struct {
	name     string
	suffixes []string
}{
	{"queues", []string{"/queue", "/queue_pressure", "/queue_change", "app/total_queue"}},
	{"utilisation", []string{"/demand_per_cpu", "/proc_latency"}},
	{"latencies", []string{"/latency", "/latency_change", "app/mean_latency", "app/p95_latency", "app/slo_margin", "app/p95_trend", "app/violation_history"}},
	{"ratios", []string{"/throughput_ratio", "/io_ratio"}},
	{"rates", []string{"/input_rate", "/demand", "/throughput"}},
	{"allocations", []string{"/cpu", "/host_cpu_util", "/host_free_cpu", "/cpu_util", "/free_cpu", "/mem_util", "/free_mem", "/task_count", "app/total_cpu", "app/mean_cpu", "app/max_cpu", "app/min_cpu"}},
	{"all", nil},
}

// inGroup reports whether feature f belongs to group g (nil suffixes:
// every feature).
func inGroup(f string, suffixes []string) bool {
	if suffixes == nil {
		return true
	}
	for _, s := range suffixes {
		if strings.HasSuffix(f, s) {
			return true
		}
	}
	return false
}

// SwapRow is one world and group of `eval obsswap`: what the policy chose
// on that world's observations with the group's features taken from the
// other world at the same placement and interval. Per task: the mean of
// the chosen target utilisation's inverse over the choices that are not
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

// obsswapCmd is `eval obsswap`: which features of the observation make a
// trained policy act differently live than in the simulator. It reads the
// observations `eval simgap -obs` recorded for one PPO controller and,
// for each world and feature group, replaces the group's features with
// the other world's at the same placement and interval and asks the
// policy again (deterministic). A group whose swap moves the live choices
// to the simulated ones (and back) is what the policy reacts to.
func obsswapCmd(_ context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval obsswap")
	obsPath := fs.String("obs", "", "observations.parquet written by eval simgap -obs (required)")
	ctrl := fs.String("controller", "", "the PPO controller in it, e.g. ppo:policies/calibrated-curve/pred (required)")
	polDir := fs.String("policy", "", "the policy's directory (default: the controller's ppo:DIR)")
	skip := fs.Int("skip", 5, "intervals skipped at the start of each run (the start-up)")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of Markdown")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	switch {
	case *obsPath == "":
		return usagef("eval: -obs is required")
	case *ctrl == "":
		return usagef("eval: -controller is required")
	case *skip < 0:
		return usagef("eval: -skip %d, want ≥ 0", *skip)
	}
	dir := *polDir
	if dir == "" {
		d, ok := strings.CutPrefix(*ctrl, "ppo:")
		if !ok {
			return usagef("eval: -controller %q names no policy directory (ppo:DIR); give -policy", *ctrl)
		}
		dir = d
	}
	p, card, err := policy.Read(os.DirFS(dir), policy.FileName)
	if err != nil {
		return fmt.Errorf("eval: policy %s: %w", dir, err)
	}
	rows, err := parquet.ReadFile[ObsRow](*obsPath)
	if err != nil {
		return fmt.Errorf("eval: %s: %w", *obsPath, err)
	}
	rep, err := obsSwap(p, card, rows, *ctrl, *skip)
	if err != nil {
		return err
	}
	rep.Policy = filepath.ToSlash(dir)
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Stdout, "%s\n", b)
		return err
	}
	_, err = fmt.Fprint(o.Stdout, swapMarkdown(rep))
	return err
}

// obsKey names one observation: world, placement, interval.
type obsKey struct {
	world     string
	placement int64
	step      int64
}

// obsSwap computes the report from the recorded rows of controller ctrl.
func obsSwap(p *policy.Policy, card *policy.Card, rows []ObsRow, ctrl string, skip int) (SwapReport, error) {
	var names []string
	index := map[string]int{}
	obs := map[obsKey][]float64{}
	var keys []obsKey
	for _, r := range rows {
		if r.Controller != ctrl {
			continue
		}
		if r.World != "live" && r.World != "sim" {
			return SwapReport{}, fmt.Errorf("eval: observations: world %q, want live or sim", r.World)
		}
		i, ok := index[r.Feature]
		if !ok {
			i = len(names)
			index[r.Feature] = i
			names = append(names, r.Feature)
		}
		k := obsKey{r.World, r.Placement, r.Step}
		o, ok := obs[k]
		if !ok {
			keys = append(keys, k)
		}
		if i != len(o) {
			return SwapReport{}, fmt.Errorf("eval: observations: %s placement %d interval %d: feature %q out of order", r.World, r.Placement, r.Step, r.Feature)
		}
		obs[k] = append(o, r.Value)
	}
	if len(keys) == 0 {
		return SwapReport{}, usagef("eval: no observations of controller %q in the file", ctrl)
	}
	if len(names) != p.ObsSize() {
		return SwapReport{}, fmt.Errorf("eval: the observations have %d features, the policy %d", len(names), p.ObsSize())
	}
	nt := len(card.Spaces.Nvec)
	var tasks []string
	for _, f := range names {
		if t, ok := strings.CutSuffix(f, "/cpu"); ok && !strings.HasPrefix(f, "app/") && !strings.HasPrefix(f, "server") {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) != nt {
		return SwapReport{}, fmt.Errorf("eval: the observations name %d tasks, the policy acts on %d", len(tasks), nt)
	}
	util, deltas := card.Spaces.TargetUtilization, card.Spaces.DeltaMillicores
	rep := SwapReport{Controller: ctrl, Statistic: "mean 1/target utilisation of the non-hold choices", Tasks: tasks}
	if util == nil {
		rep.Statistic = "mean delta of the non-hold choices, millicores"
	}
	var per [2]int
	for _, k := range keys {
		if int(k.step) >= skip && len(obs[k]) == len(names) {
			if _, ok := obs[obsKey{other(k.world), k.placement, k.step}]; ok {
				per[worldIndex(k.world)]++
			}
		}
	}
	rep.Intervals = min(per[0], per[1])
	if rep.Intervals == 0 {
		return SwapReport{}, fmt.Errorf("eval: no interval of controller %q is recorded in both worlds past -skip", ctrl)
	}
	act := make([]int, nt)
	x := make([]float64, len(names))
	groups := append([]struct {
		name     string
		suffixes []string
	}{{"none", []string{}}}, swapGroups...)
	for _, world := range []string{"live", "sim"} {
		for _, g := range groups {
			row := SwapRow{World: world, Swap: g.name, Mean: make([]float64, nt), Hold: make([]float64, nt)}
			cnt := make([]float64, nt)
			n := 0.0
			for _, k := range keys {
				if k.world != world || int(k.step) < skip {
					continue
				}
				src, ok := obs[obsKey{other(world), k.placement, k.step}]
				if !ok || len(src) != len(names) || len(obs[k]) != len(names) {
					continue
				}
				copy(x, obs[k])
				for i, f := range names {
					if g.name != "none" && inGroup(f, g.suffixes) {
						x[i] = src[i]
					}
				}
				if _, err := p.Act(x, true, nil, act); err != nil {
					return SwapReport{}, fmt.Errorf("eval: policy: %w", err)
				}
				n++
				for t, a := range act {
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
						row.Hold[t]++
					} else {
						row.Mean[t] += v
						cnt[t]++
					}
				}
			}
			for t := range row.Mean {
				if cnt[t] > 0 {
					row.Mean[t] /= cnt[t]
				}
				row.Hold[t] /= n
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}

func other(world string) string {
	if world == "live" {
		return "sim"
	}
	return "live"
}

func worldIndex(world string) int {
	if world == "live" {
		return 0
	}
	return 1
}

// swapMarkdown renders the report as a table: one row per world and swap,
// one column per task ("mean (hold share)").
func swapMarkdown(r SwapReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Observation swap: %s\n\n", r.Controller)
	fmt.Fprintf(&b, "Policy %s, deterministic; %d intervals per world. Each cell: %s (share of holds), on that world's observations with the group's features taken from the other world at the same placement and interval. Groups: ", r.Policy, r.Intervals, r.Statistic)
	for i, g := range swapGroups {
		if i > 0 {
			b.WriteString("; ")
		}
		if g.suffixes == nil {
			fmt.Fprintf(&b, "%s (every feature)", g.name)
		} else {
			fmt.Fprintf(&b, "%s (%s)", g.name, strings.Join(g.suffixes, ", "))
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

package ppo

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"streamscale/ppo/internal/nn"
)

// newTestGraph is a float32 loss graph with random parameters and inputs,
// some ratios clipped.
func newTestGraph(t *testing.T, a *nn.Arch, batch int) *lossGraph[float32] {
	t.Helper()
	theta := make([]float32, a.Size)
	r := rand.New(rand.NewPCG(11, 12))
	for i := range theta {
		theta[i] = float32(r.NormFloat64() * 0.3)
	}
	lg, err := newLossGraph(a, batch, theta, 0.01, 0.5, true)
	if err != nil {
		t.Fatal(err)
	}
	fillLossInputs(lg, r)
	lg.setClip(0.2, 0.2)
	for i := range lg.oldLogp {
		lg.oldLogp[i] = float32(-4 + r.NormFloat64()*0.5)
	}
	return lg
}

// TestProgramMatchesTapeMachine holds the program (exec.go) to gorgonia's
// TapeMachine on the same graphs: the same loss, outputs and gradients,
// bit for bit, at the streamscale shapes and small ragged ones.
func TestProgramMatchesTapeMachine(t *testing.T) {
	for _, tc := range []struct {
		obs, batch int
		hidden     []int
		nvec       []int
	}{{181, 256, []int{64, 64}, []int{5, 5, 5, 5, 5, 5, 5, 5, 5}}, {7, 13, []int{6, 4}, []int{3, 2, 4}}} {
		a, err := nn.NewArch(tc.obs, tc.hidden, tc.nvec)
		if err != nil {
			t.Fatal(err)
		}
		lg := newTestGraph(t, a, tc.batch)
		grad := make([]float32, a.Size)
		for range 2 { // the second run reuses every output
			if err := lg.run(grad, false); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string][]float32{"grad": append([]float32(nil), grad...)}
		for name, v := range map[string]G.Value{"pg": lg.pg, "ent": lg.ent, "vf": lg.vf, "actor loss": lg.actor.loss, "critic loss": lg.critic.loss} {
			want[name] = []float32{float32(scalarOf(v))}
		}
		want["logp"] = append([]float32(nil), vectorOf[float32](lg.logp)...)
		want["ratio"] = append([]float32(nil), vectorOf[float32](lg.ratio)...)
		want["value"] = append([]float32(nil), vectorOf[float32](lg.value)...)

		got := map[string][]float32{"grad": make([]float32, a.Size)}
		for _, h := range []*graphHalf{&lg.actor, &lg.critic} {
			vals := make([]G.Value, len(h.gradN))
			for i, gn := range h.gradN {
				G.Read(gn, &vals[i])
			}
			reads := map[string]*G.Value{}
			add := func(name string, n *G.Node) {
				v := new(G.Value)
				G.Read(n, v)
				reads[name] = v
			}
			add(map[bool]string{true: "actor loss", false: "critic loss"}[h == &lg.actor], h.lossN)
			if h == &lg.actor {
				add("pg", lg.pgN)
				add("ent", lg.entN)
				add("logp", lg.logpN)
				add("ratio", lg.ratioN)
			} else {
				add("vf", lg.vfN)
				add("value", lg.valueN)
			}
			vm := G.NewTapeMachine(h.g)
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			vm.Close()
			for i, v := range vals {
				p := a.Params[h.first+i]
				copy(got["grad"][p.Off:p.Off+p.Len()], v.Data().([]float32))
			}
			for name, v := range reads {
				switch d := (*v).Data().(type) {
				case float32:
					got[name] = []float32{d}
				case []float32:
					got[name] = append([]float32(nil), d...)
				}
			}
		}
		for name, w := range want {
			g := got[name]
			if len(g) != len(w) {
				t.Fatalf("obs %d: %s has %d values, tape machine %d", tc.obs, name, len(w), len(g))
			}
			for i := range w {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("obs %d: %s[%d] = %v, tape machine %v", tc.obs, name, i, w[i], g[i])
				}
			}
		}
	}
}

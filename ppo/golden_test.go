package ppo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/cpu"

	"streamscale/ppo/internal/sgemm"
)

var update = flag.Bool("update", false, "rewrite testdata/train_golden.json for this machine kind")

// machineKind names what the trained bits depend on: whether the matrix
// kernel fuses multiply and add (assembly) or not (plain Go, or the
// purego build tag), and whether math.Exp takes its FMA path (Go's
// runtime checks AVX2+FMA). AVX-512 and AVX2 kernels give the same bits.
func machineKind() string {
	return fmt.Sprintf("sgemm-fma=%v math-fma=%v", sgemm.Assembly, cpu.X86.HasAVX2 && cpu.X86.HasFMA)
}

// goldenRuns are short trainings whose final weights and Adam moments are
// pinned: CartPole (tiny shapes) and the streamscale shapes (observation
// 181, nvec 9×5, minibatches of 32 with a ragged last one of 4, so every
// kernel edge is crossed), each serially and with two workers.
func goldenRuns(t *testing.T) map[string]string {
	stream := DefaultConfig()
	stream.NumEnvs, stream.NumSteps, stream.BatchSize, stream.Epochs = 2, 50, 32, 2
	stream.TotalTimesteps = 200
	stream.Seed = 5
	runs := map[string]string{}
	for _, workers := range []int{1, 2} {
		for name, cfg := range map[string]Config{"cartpole": smallConfig(1), "stream": stream} {
			var env VecEnv = &streamEnv{n: cfg.NumEnvs}
			if name == "cartpole" {
				env = newCartpole(t, cfg.NumEnvs)
			}
			tr, err := New(cfg, env, Options{Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Learn(context.Background()); err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			for _, s := range [][]float32{tr.theta, tr.opt.m, tr.opt.v} {
				if err := binary.Write(h, binary.LittleEndian, s); err != nil {
					t.Fatal(err)
				}
			}
			runs[fmt.Sprintf("%s/workers=%d", name, workers)] = hex.EncodeToString(h.Sum(nil))
		}
	}
	return runs
}

// TestTrainGolden: training gives, bit for bit, the weights and Adam
// moments the code that trained the committed policies gave on this
// machine kind (testdata/train_golden.json, written by -update). A kind
// without an entry is skipped; faster kernels must not move a bit.
func TestTrainGolden(t *testing.T) {
	path := filepath.Join("testdata", "train_golden.json")
	all := map[string]map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &all); err != nil {
			t.Fatal(err)
		}
	} else if !*update {
		t.Fatal(err)
	}
	got, kind := goldenRuns(t), machineKind()
	if *update {
		all[kind] = got
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, ok := all[kind]
	if !ok {
		t.Skipf("no golden hashes for machine kind %q", kind)
	}
	for run, h := range want {
		if got[run] != h {
			t.Errorf("%s (%s): weights hash %s, golden %s", run, kind, got[run], h)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d runs, golden has %d", len(got), len(want))
	}
}

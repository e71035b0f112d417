package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// artifact writes p's weights and card as the files of Read.
func artifact(t *testing.T, p *Policy) (weights []byte, card Card) {
	t.Helper()
	var w bytes.Buffer
	sha, err := p.WriteSafetensors(&w)
	if err != nil {
		t.Fatal(err)
	}
	card = Card{Format: CardFormat, Hyperparameters: json.RawMessage(`{"net_arch":[8,8]}`), WeightsSHA256: sha, Spaces: testSpaces()}
	for _, ts := range p.Tensors() {
		card.Tensors = append(card.Tensors, ts.Name)
	}
	slices.Sort(card.Tensors)
	return w.Bytes(), card
}

// param returns the slice of p's parameters of the named tensor.
func param(t *testing.T, p *Policy, name string) []float32 {
	t.Helper()
	for _, q := range p.arch.Params {
		if q.Name == name {
			return p.theta[q.Off : q.Off+q.Len()]
		}
	}
	t.Fatalf("no tensor %s", name)
	return nil
}

// TestLoadRefusesNonFinite: a NaN or an infinity in any weight, and
// finite weights whose outputs overflow, are refused at load with an
// error naming the tensor (or the output), through Read as every command
// loads policies.
func TestLoadRefusesNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, p *Policy)
		inMsg string
	}{
		{"nan weight", func(t *testing.T, p *Policy) { param(t, p, "actor.2.weight")[5] = float32(math.NaN()) }, "tensor actor.2.weight value 40 is NaN"},
		{"inf weight", func(t *testing.T, p *Policy) { param(t, p, "critic.0.weight")[3] = float32(math.Inf(-1)) }, "tensor critic.0.weight value 27 is -Inf"},
		{"inf bias", func(t *testing.T, p *Policy) { param(t, p, "actor.4.bias")[0] = float32(math.Inf(1)) }, "tensor actor.4.bias value 0 is +Inf"},
		{"overflowing value", func(t *testing.T, p *Policy) {
			clear(param(t, p, "critic.2.weight"))
			for i := range param(t, p, "critic.2.bias") {
				param(t, p, "critic.2.bias")[i] = 10 // every hidden unit ≈ 1
			}
			for i := range param(t, p, "critic.4.weight") {
				param(t, p, "critic.4.weight")[i] = 3e38 // 8 × 3e38 overflows float32
			}
		}, "critic's value of the box's middle is +Inf"},
		{"overflowing logits", func(t *testing.T, p *Policy) {
			clear(param(t, p, "actor.2.weight"))
			for i := range param(t, p, "actor.2.bias") {
				param(t, p, "actor.2.bias")[i] = 10
			}
			w := param(t, p, "actor.4.weight")
			for i := range w {
				w[i] = 3e38
				if i%2 == 1 {
					w[i] = -3e38
				}
			}
		}, "log-probability"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPolicy(t)
			tc.spoil(t, p)
			wb, card := artifact(t, p)
			cb, err := json.Marshal(card)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = Read(fstest.MapFS{"policy.safetensors": {Data: wb}, "policy.json": {Data: cb}}, FileName)
			if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), tc.inMsg) {
				t.Fatalf("Read: %v, want ErrNonFinite naming %q", err, tc.inMsg)
			}
		})
	}
	// The unspoiled policy loads.
	wb, card := artifact(t, testPolicy(t))
	if _, err := Load(wb, &card); err != nil {
		t.Fatal(err)
	}
}

// TestReadRefusesIrregularFiles: a directory, a file over the limit (a
// sparse one: its size is what counts) and a FIFO in place of either file
// are refused, naming the file and the limit, without blocking.
func TestReadRefusesIrregularFiles(t *testing.T) {
	wb, card := artifact(t, testPolicy(t))
	cb, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  error
		inMsg string
	}{
		{"card is a directory", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "policy.json")) }, ErrNotRegular, "policy.json is not a regular file"},
		{"weights are a directory", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "policy.json"), cb)
			mkdir(t, filepath.Join(dir, "policy.safetensors"))
		}, ErrNotRegular, "policy.safetensors is not a regular file"},
		{"oversized weights", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "policy.json"), cb)
			p := filepath.Join(dir, "policy.safetensors")
			write(t, p, wb)
			if err := os.Truncate(p, MaxWeightsBytes+1); err != nil {
				t.Fatal(err)
			}
		}, ErrTooLarge, "limit 67108864 bytes"},
		{"oversized card", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "policy.json")
			write(t, p, cb)
			if err := os.Truncate(p, MaxCardBytes+1); err != nil {
				t.Fatal(err)
			}
		}, ErrTooLarge, "limit 1048576 bytes"},
		{"weights are a fifo", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "policy.json"), cb)
			mkfifo(t, filepath.Join(dir, "policy.safetensors"))
		}, ErrNotRegular, "policy.safetensors is not a regular file"},
		{"card is a fifo", func(t *testing.T, dir string) { mkfifo(t, filepath.Join(dir, "policy.json")) }, ErrNotRegular, "policy.json is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			_, _, err := Read(os.DirFS(dir), FileName)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.inMsg) {
				t.Fatalf("Read: %v, want %v naming %q", err, tc.want, tc.inMsg)
			}
		})
	}
	// Both files in place load.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "policy.json"), cb)
	write(t, filepath.Join(dir, "policy.safetensors"), wb)
	if _, _, err := Read(os.DirFS(dir), FileName); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

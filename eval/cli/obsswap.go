package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"

	"streamscale/eval/simgap"
	"streamscale/internal/command"
	"streamscale/ppo/policy"
)

// maxObservationsBytes bounds the observations.parquet eval obsswap reads.
const maxObservationsBytes = 1 << 30

// maxObservationRows bounds its rows (a 60-minute simgap run of five
// controllers records about 10 million).
const maxObservationRows = 1 << 25

// obsswapCmd is `eval obsswap`: which features of the observation make a
// trained policy act differently live than in the simulator (simgap.Swap
// on the observations `eval simgap -obs` recorded for one PPO
// controller).
func obsswapCmd(_ context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval obsswap")
	obsPath := fs.String("obs", "", "observations.parquet written by eval simgap -obs (required)")
	ctrl := fs.String("controller", "", "the PPO controller in it, e.g. ppo:policies/calibrated/pred (required)")
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
	rows, err := readObservations(*obsPath)
	if err != nil {
		return err
	}
	rep, err := simgap.Swap(p, card, rows, *ctrl, *skip)
	if errors.Is(err, simgap.ErrNoObservations) {
		return usageError(err)
	}
	if err != nil {
		return fmt.Errorf("eval: %w", err)
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
	_, err = fmt.Fprint(o.Stdout, simgap.SwapMarkdown(rep))
	return err
}

// readObservations reads an observations.parquet, a regular file of at
// most maxObservationsBytes.
func readObservations(path string) ([]simgap.ObsRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("eval: %w", err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("eval: %s is not a regular file", path)
	case st.Size() > maxObservationsBytes:
		return nil, fmt.Errorf("eval: %s has %d bytes, more than %d", path, st.Size(), maxObservationsBytes)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	if n := pf.NumRows(); n < 0 || n > maxObservationRows {
		return nil, fmt.Errorf("eval: %s: %d rows in a file of %d bytes", path, n, st.Size())
	}
	rows := make([]simgap.ObsRow, pf.NumRows())
	r := parquet.NewGenericReader[simgap.ObsRow](pf)
	defer r.Close()
	total := 0
	for total < len(rows) {
		n, err := r.Read(rows[total:])
		total += n
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("eval: %s: %w", path, err)
		}
	}
	return rows[:total], nil
}

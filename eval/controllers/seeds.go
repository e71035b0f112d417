package controllers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"streamscale/env"
	"streamscale/internal/regfile"
)

// SeedsFile is the file `train -seeds` writes beside its seeds'
// directories (train/run.SeedsFile), and MaxSeeds bounds the seeds of one
// controller (train's -seeds bound).
const (
	SeedsFile = "seeds.json"
	MaxSeeds  = 64
)

// seedsFileLimit bounds the size of a seeds.json.
const seedsFileLimit = 1 << 20

// SeedDir is seed's directory under a `train -seeds -out DIR` directory
// (train/run.SeedDir).
func SeedDir(dir string, seed uint64) string {
	return filepath.Join(dir, "seed-"+strconv.FormatUint(seed, 10))
}

// Seeds returns the members of a controller of several seeds, in seed
// order, or nil for a single controller (see seedsParser); the command
// hands them to eval/paired as its Seeded.
func (s Spec) Seeds() []Spec { return s.seeds }

// ParseSeeds decodes a seeds.json: the seeds of its "runs", in increasing
// order (whatever order -seeds gave them in).
// It fails for malformed JSON, no runs, a run without a seed, a seed
// listed twice or more than MaxSeeds runs; other fields are ignored.
func ParseSeeds(b []byte) ([]uint64, error) {
	var f struct {
		Runs []struct {
			Seed *uint64 `json:"seed"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", SeedsFile, err)
	}
	switch {
	case len(f.Runs) == 0:
		return nil, fmt.Errorf("%s lists no runs", SeedsFile)
	case len(f.Runs) > MaxSeeds:
		return nil, fmt.Errorf("%s lists %d runs, at most %d", SeedsFile, len(f.Runs), MaxSeeds)
	}
	var seeds []uint64
	for i, r := range f.Runs {
		switch {
		case r.Seed == nil:
			return nil, fmt.Errorf("%s: run %d has no seed", SeedsFile, i)
		case slices.Contains(seeds, *r.Seed):
			return nil, fmt.Errorf("%s lists seed %d twice", SeedsFile, *r.Seed)
		}
		seeds = append(seeds, *r.Seed)
	}
	slices.Sort(seeds)
	return seeds, nil
}

// readSeeds reads dir's seeds.json; ok is false when there is none.
func readSeeds(dir string) (seeds []uint64, ok bool, err error) {
	path := filepath.Join(dir, SeedsFile)
	b, err := regfile.ReadFile(path, seedsFileLimit)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	seeds, err = ParseSeeds(b)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return seeds, true, nil
}

// seedsParser parses the forms of a PPO controller of several seeds, each
// one controller of the evaluation whose members are single policies:
//
//	ppo:DIR1+DIR2+…  the policies in DIR1, DIR2, …, one per seed (members
//	                 ppo:DIR1, ppo:DIR2, …)
//	ppo:DIR          when DIR holds a seeds.json (`train -seeds -out DIR`):
//	                 its seeds' policies in DIR/seed-<n>, in increasing
//	                 seed order (members ppo:DIR/seed-<n>)
//	ppo              when <PoliciesDir>/<profile>/seeds.json exists for a
//	                 profile: each profile's seeds (members ppo#seed-<n>,
//	                 in <PoliciesDir>/<profile>/seed-<n>); every profile
//	                 that has one must list the same seeds
//
// and the same under ppo-sample. ok is false when arg names a single
// policy (parse it as one).
func seedsParser(name string, deterministic bool, arg string, o Options) (Spec, bool, error) {
	group := func(canon string, ms []Spec) (Spec, bool, error) {
		return Spec{spec: canon, seeds: ms}, true, nil
	}
	switch {
	case strings.Contains(arg, "+"):
		var dirs []string
		var ms []Spec
		for part := range strings.SplitSeq(arg, "+") {
			if part == "" {
				return Spec{}, false, fmt.Errorf("empty directory in %q (want DIR1+DIR2+…)", arg)
			}
			dir := filepath.Clean(part)
			if slices.Contains(dirs, dir) {
				return Spec{}, false, fmt.Errorf("directory %s listed twice", dir)
			}
			if _, ok, err := readSeeds(dir); err != nil {
				return Spec{}, false, err
			} else if ok {
				return Spec{}, false, fmt.Errorf("%s holds a %s: list its seed directories, or give it alone", dir, SeedsFile)
			}
			dirs = append(dirs, dir)
			ms = append(ms, ppoSpec(name, deterministic, name+":"+dir, func(string) string { return dir }))
		}
		if len(ms) > MaxSeeds {
			return Spec{}, false, fmt.Errorf("%d directories, at most %d", len(ms), MaxSeeds)
		}
		return group(name+":"+strings.Join(dirs, "+"), ms)
	case arg != "":
		dir := filepath.Clean(arg)
		seeds, ok, err := readSeeds(dir)
		if err != nil || !ok {
			return Spec{}, false, err
		}
		var ms []Spec
		for _, seed := range seeds {
			sd := SeedDir(dir, seed)
			ms = append(ms, ppoSpec(name, deterministic, name+":"+sd, func(string) string { return sd }))
		}
		return group(name+":"+dir, ms)
	}
	var seeds []uint64
	from := ""
	for _, prof := range env.Profiles() {
		dir := filepath.Join(o.PoliciesDir, prof)
		s, ok, err := readSeeds(dir)
		switch {
		case err != nil:
			return Spec{}, false, err
		case !ok:
			continue
		case from != "" && !slices.Equal(s, seeds):
			return Spec{}, false, fmt.Errorf("%s lists seeds %v, %s %v: want the same seeds for every profile", filepath.Join(from, SeedsFile), seeds, filepath.Join(dir, SeedsFile), s)
		}
		seeds, from = s, dir
	}
	if from == "" {
		return Spec{}, false, nil
	}
	var ms []Spec
	for _, seed := range seeds {
		ms = append(ms, ppoSpec(name, deterministic, name+"#seed-"+strconv.FormatUint(seed, 10),
			func(profile string) string { return SeedDir(filepath.Join(o.PoliciesDir, profile), seed) }))
	}
	return group(name, ms)
}

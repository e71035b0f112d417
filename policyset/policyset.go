package policyset

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"

	"streamscale/ppo/policy"
)

// ManifestName is the manifest's file name in a policies directory.
const ManifestName = "manifest.json"

// MaxManifestBytes is the size limit of the manifest (it is a few KB).
const MaxManifestBytes = 1 << 20 // 1 MiB

// DefaultSet is the set whose models a server names by profile alone.
const DefaultSet = "default"

// ValidName is what a set, a profile and a model name may look like: a
// URL path segment and a directory name, lower case, at most 64 bytes.
var ValidName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ErrManifest is returned (wrapped) for a manifest that does not decode
// or does not validate.
var ErrManifest = errors.New("policyset: invalid manifest")

// Manifest lists the policy sets of a directory, in file order.
type Manifest struct {
	Sets []Set
}

// Set is one named set of policies, one per profile.
type Set struct {
	Name     string   // directory under the policies directory; required
	Purpose  string   // what the set is for; required
	Recipe   string   // configuration it was trained with (a path in the repository), if recorded
	Scenario string   // simulator preset it was trained on (env.Scenarios), if recorded
	Profiles []string // workload profiles, each a directory under the set's; required, at least one
	Headline string   // one-line result, if recorded
	// Diagnostics are training diagnostics by profile (only the set's
	// profiles; any may be absent).
	Diagnostics map[string]Diagnostics
}

// Diagnostics are a trained policy's end-of-training diagnostics; a nil
// field was not recorded.
type Diagnostics struct {
	ExplainedVariance *float64 // critic's explained variance of the returns, ≤ 1
	EntropyFraction   *float64 // policy entropy over the uniform policy's, in [0, 1]
}

// Model is one servable policy of a manifest.
type Model struct {
	Name    string // ModelName(Set, Profile)
	Set     string
	Profile string
	Dir     string // slash-separated, relative to the policies directory: <set>/<profile>
}

// ModelName is the name a server gives the policy of profile in set:
// profile for DefaultSet, set-profile otherwise.
func ModelName(set, profile string) string {
	if set == DefaultSet {
		return profile
	}
	return set + "-" + profile
}

// Models returns every set's models, sets in manifest order and profiles
// in the set's order.
func (m *Manifest) Models() []Model {
	var out []Model
	for _, s := range m.Sets {
		for _, p := range s.Profiles {
			out = append(out, Model{Name: ModelName(s.Name, p), Set: s.Name, Profile: p, Dir: path.Join(s.Name, p)})
		}
	}
	return out
}

// Set returns the set of that name.
func (m *Manifest) Set(name string) (Set, bool) {
	i := slices.IndexFunc(m.Sets, func(s Set) bool { return s.Name == name })
	if i < 0 {
		return Set{}, false
	}
	return m.Sets[i], true
}

// Read reads and decodes fsys's ManifestName. Without one it returns an
// error that errors.Is fs.ErrNotExist.
func Read(fsys fs.FS) (*Manifest, error) {
	b, err := policy.ReadRegular(fsys, ManifestName, MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("policyset: %w", err)
	}
	m, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, ManifestName)
	}
	return m, nil
}

// validate checks what the decoder cannot see key by key.
func (m *Manifest) validate() error {
	if len(m.Sets) == 0 {
		return fmt.Errorf("%w: sets is empty", ErrManifest)
	}
	sets := map[string]bool{}
	models := map[string]string{}
	for i, s := range m.Sets {
		at := fmt.Sprintf("sets[%d]", i)
		if !ValidName.MatchString(s.Name) {
			return fmt.Errorf("%w: %s.name %.80q must match %s", ErrManifest, at, s.Name, ValidName)
		}
		if sets[s.Name] {
			return fmt.Errorf("%w: %s.name %q: a set of that name comes earlier", ErrManifest, at, s.Name)
		}
		sets[s.Name] = true
		if s.Purpose == "" {
			return fmt.Errorf("%w: %s.purpose is empty", ErrManifest, at)
		}
		if len(s.Profiles) == 0 {
			return fmt.Errorf("%w: %s.profiles is empty", ErrManifest, at)
		}
		for j, p := range s.Profiles {
			if !ValidName.MatchString(p) {
				return fmt.Errorf("%w: %s.profiles[%d] %.80q must match %s", ErrManifest, at, j, p, ValidName)
			}
			if slices.Index(s.Profiles, p) < j {
				return fmt.Errorf("%w: %s.profiles[%d] %q is listed twice", ErrManifest, at, j, p)
			}
			name := ModelName(s.Name, p)
			if !ValidName.MatchString(name) {
				return fmt.Errorf("%w: %s.profiles[%d]: model name %q must match %s", ErrManifest, at, j, name, ValidName)
			}
			if prev, ok := models[name]; ok {
				return fmt.Errorf("%w: %s.profiles[%d]: model name %q is also that of %s", ErrManifest, at, j, name, prev)
			}
			models[name] = s.Name + "/" + p
		}
		keys := make([]string, 0, len(s.Diagnostics))
		for p := range s.Diagnostics {
			keys = append(keys, p)
		}
		slices.Sort(keys)
		for _, p := range keys {
			if !slices.Contains(s.Profiles, p) {
				return fmt.Errorf("%w: %s.diagnostics.%s: %q is not one of the set's profiles %v", ErrManifest, at, p, p, s.Profiles)
			}
			d := s.Diagnostics[p]
			if v := d.ExplainedVariance; v != nil && !(*v <= 1) {
				return fmt.Errorf("%w: %s.diagnostics.%s.explained_variance %v, want ≤ 1", ErrManifest, at, p, *v)
			}
			if v := d.EntropyFraction; v != nil && !(*v >= 0 && *v <= 1) {
				return fmt.Errorf("%w: %s.diagnostics.%s.entropy_fraction %v, want in [0, 1]", ErrManifest, at, p, *v)
			}
		}
	}
	return nil
}

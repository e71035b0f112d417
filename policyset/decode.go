package policyset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Decode parses a manifest strictly (see the package doc) and validates
// it. Errors wrap ErrManifest and name the offending key by its path.
func Decode(b []byte) (*Manifest, error) {
	d := &decoder{dec: json.NewDecoder(bytes.NewReader(b))}
	d.dec.UseNumber()
	var m Manifest
	seenSets := false
	err := d.object("", func(key, at string) error {
		if key != "sets" {
			return d.unknown(at)
		}
		seenSets = true
		return d.array(at, func(i int, at string) error {
			s, err := d.set(at)
			if err == nil {
				m.Sets = append(m.Sets, s)
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the manifest's object", ErrManifest)
	}
	if !seenSets {
		return nil, fmt.Errorf("%w: key sets is missing", ErrManifest)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// decoder walks the JSON tokens of a manifest.
type decoder struct {
	dec *json.Decoder
}

func (d *decoder) token(at string) (json.Token, error) {
	t, err := d.dec.Token()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: unexpected end of input at %s", ErrManifest, where(at))
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: malformed JSON at byte %d (%s): %v", ErrManifest, se.Offset, where(at), err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, where(at), err)
	}
	return t, nil
}

func where(at string) string {
	if at == "" {
		return "the top level"
	}
	return at
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func (d *decoder) unknown(at string) error {
	return fmt.Errorf("%w: unknown key %.80s", ErrManifest, at)
}

// TokenKind names the JSON type of a decoder token for an error message
// ("an object", "a string", …).
func TokenKind(t json.Token) string {
	switch t.(type) {
	case json.Delim:
		if t == json.Delim('{') {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// object reads an object at path at, calling field for each key (which
// must consume the value); a duplicate key is an error.
func (d *decoder) object(at string, field func(key, at string) error) error {
	t, err := d.token(at)
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%w: %s is %s, want an object", ErrManifest, where(at), TokenKind(t))
	}
	seen := map[string]bool{}
	for d.dec.More() {
		t, err := d.token(at)
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("%w: %s: key is %s", ErrManifest, where(at), TokenKind(t))
		}
		sub := join(at, key)
		if seen[key] {
			return fmt.Errorf("%w: duplicate key %.80s", ErrManifest, sub)
		}
		seen[key] = true
		if err := field(key, sub); err != nil {
			return err
		}
	}
	_, err = d.token(at) // '}': Token checks the nesting
	return err
}

// array reads an array at path at, calling elem for each element.
func (d *decoder) array(at string, elem func(i int, at string) error) error {
	t, err := d.token(at)
	if err != nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%w: %s is %s, want an array", ErrManifest, where(at), TokenKind(t))
	}
	for i := 0; d.dec.More(); i++ {
		if err := elem(i, at+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	_, err = d.token(at)
	return err
}

func (d *decoder) str(at string) (string, error) {
	t, err := d.token(at)
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s is %s, want a string", ErrManifest, at, TokenKind(t))
	}
	return s, nil
}

func (d *decoder) num(at string) (*float64, error) {
	t, err := d.token(at)
	if err != nil {
		return nil, err
	}
	n, ok := t.(json.Number)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %s, want a number", ErrManifest, at, TokenKind(t))
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(v, 0) {
		return nil, fmt.Errorf("%w: %s: number %.40s is out of range", ErrManifest, at, n)
	}
	return &v, nil
}

func (d *decoder) set(at string) (Set, error) {
	var s Set
	required := map[string]bool{"name": false, "purpose": false, "profiles": false}
	err := d.object(at, func(key, at string) error {
		if _, ok := required[key]; ok {
			required[key] = true
		}
		var err error
		switch key {
		case "name":
			s.Name, err = d.str(at)
		case "purpose":
			s.Purpose, err = d.str(at)
		case "recipe":
			s.Recipe, err = d.str(at)
		case "scenario":
			s.Scenario, err = d.str(at)
		case "headline":
			s.Headline, err = d.str(at)
		case "profiles":
			s.Profiles = []string{}
			err = d.array(at, func(_ int, at string) error {
				p, err := d.str(at)
				s.Profiles = append(s.Profiles, p)
				return err
			})
		case "diagnostics":
			s.Diagnostics = map[string]Diagnostics{}
			err = d.object(at, func(profile, at string) error {
				var g Diagnostics
				err := d.object(at, func(key, at string) error {
					var err error
					switch key {
					case "explained_variance":
						g.ExplainedVariance, err = d.num(at)
					case "entropy_fraction":
						g.EntropyFraction, err = d.num(at)
					default:
						return d.unknown(at)
					}
					return err
				})
				s.Diagnostics[profile] = g
				return err
			})
		default:
			return d.unknown(at)
		}
		return err
	})
	if err != nil {
		return Set{}, err
	}
	for _, k := range []string{"name", "purpose", "profiles"} {
		if !required[k] {
			return Set{}, fmt.Errorf("%w: key %s.%s is missing", ErrManifest, at, k)
		}
	}
	return s, nil
}

package envserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// decodeStrict decodes the JSON object body into v (a pointer to a
// request struct) as encoding/json does with unknown fields disallowed,
// and also refuses a key given twice in one object, trailing data after
// the value and an empty body. Keys are compared as encoding/json matches
// them to fields, case-folded, so {"seed":1,"Seed":2} is a duplicate too.
// Errors wrap ErrBadRequest and name the key.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: empty JSON body", ErrBadRequest)
	}
	if err := checkKeys(body); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: trailing data after the JSON value", ErrBadRequest)
	}
	return nil
}

// maxDepth bounds the nesting checkKeys follows (encoding/json's own
// limit is 10000; requests here nest two levels).
const maxDepth = 64

// checkKeys walks the tokens of one JSON value and fails on a duplicate
// key in any object, naming it and its path, or on a syntax error.
func checkKeys(body []byte) error {
	type frame struct {
		object    bool
		expectKey bool                // an object's next string is a key
		keys      map[string]struct{} // folded keys seen
		path      string
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	key := ""
	// valueDone marks the end of a value inside the top frame.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return errors.New("unexpected end of JSON input")
			}
			return nil
		}
		if err != nil {
			return err
		}
		path := "$"
		if n := len(stack); n > 0 {
			path = stack[n-1].path
			if stack[n-1].object {
				path += "." + key
			} else {
				path += "[]"
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) == maxDepth {
					return fmt.Errorf("JSON nested deeper than %d at %s", maxDepth, path)
				}
				stack = append(stack, frame{object: t == '{', expectKey: t == '{', keys: map[string]struct{}{}, path: path})
			default: // '}', ']'
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := &stack[n-1]
				f := foldKey(t)
				if _, dup := top.keys[f]; dup {
					where := ""
					if top.path != "$" {
						where = " in " + top.path
					}
					return fmt.Errorf("duplicate key %q%s", t, where)
				}
				top.keys[f] = struct{}{}
				top.expectKey = false
				key = t
				continue
			}
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			// One value read; what follows is decodeStrict's concern
			// (trailing data), not a second document to walk.
			return nil
		}
	}
}

// foldKey is the form under which encoding/json's case-insensitive field
// matching treats two keys as the same: every rune mapped through upper
// then lower case (so 'K', 'k' and the Kelvin sign U+212A agree).
func foldKey(k string) string {
	if isLowerASCII(k) {
		return k
	}
	var b strings.Builder
	for _, r := range k {
		if r == utf8.RuneError {
			b.WriteRune(r)
			continue
		}
		b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
	}
	return b.String()
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

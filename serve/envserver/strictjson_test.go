package envserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecodeStrict: the request decoder never panics; it refuses only
// with ErrBadRequest; what it accepts encoding/json (unknown fields
// disallowed) decodes to the same request; and an accepted object with
// one of its members given again is refused, naming that key.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{
		`{"profile":"etl"}`, `{"profile":"etl","profile":"pred"}`, `{"profile":"etl","PROFILE":"pred"}`,
		`{"profile":"pred","num_envs":4,"placement_seeds":[42,37],"autoreset":"same_step","steps":100}`,
		`{"placement_seed":7,"rate_mult":2.5,"trace":"taxi"}`, `{"seed":18446744073709551615}`,
		`{"a":{"b":[{"c":1,"c":2}]}}`, `null`, `{} {}`, `{"profile":"etl"`, "{\"\u212a\":1,\"k\":2}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got CreateRequest
		err := decodeStrict(b, &got)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		var want CreateRequest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, encoding/json %+v", got, want)
		}
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		var members map[string]json.RawMessage
		if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(b, &members) != nil || len(members) == 0 {
			return
		}
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		k := keys[0]
		qk, _ := json.Marshal(k)
		off := len(b) - len(trimmed) + 1
		dup := append(append(append(append(slices.Clone(b[:off]), qk...), ':'), members[k]...), ',')
		dup = append(dup, b[off:]...)
		err = decodeStrict(dup, &got)
		if !errors.Is(err, ErrBadRequest) || !bytes.Contains([]byte(err.Error()), []byte("duplicate key")) {
			t.Fatalf("%q with %s given twice: %v, want a duplicate-key refusal", dup, qk, err)
		}
	})
}

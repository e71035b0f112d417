package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"

	"streamscale/policyset"
)

// inferRequest is what an Open Inference Protocol request carries beyond
// the observations (which land in the actRequest).
type inferRequest struct {
	id      *string  // echoed in the response
	outputs []string // requested outputs, in order; empty: all
}

// v2Input is one decoded input tensor.
type v2Input struct {
	name, datatype string
	shape          []int
	data           []float64
	dataDims       []int // nesting of data: [len] when flat
	seen           [4]bool
}

// maxNest bounds the nesting of a tensor's data (the deepest input,
// task, is [batch, tasks, 15]).
const maxNest = 4

// decodeInfer parses an inference request body against the policy's
// layout and input shapes into req (observations, n, deterministic) and
// returns the request's id and outputs. It refuses, naming the key or
// element: malformed JSON, trailing data, unknown or duplicate keys,
// values of the wrong JSON type, non-empty parameters, an input the policy
// does not read or one it reads missing or repeated, a datatype other than
// FP32 or FP64, a shape other than [batch, …Box shape], inputs of
// different batch sizes, data of another length (or nesting) than the
// shape's, numbers that overflow, values outside their Box, and unknown or
// repeated outputs; more than maxBatch observations is a 413. A residual
// policy (m.rule > 0) also reads rule_targets, FP32 or FP64 [batch,
// tasks] in [0, maxRuleTarget] millicores, and may be asked for the
// targets output; any other refuses both. It never panics and changes
// nothing but req.
func decodeInfer(body []byte, lay *layout, m *v2Model, maxBatch int, req *actRequest) (*inferRequest, *reqError) {
	d := &v2decoder{dec: json.NewDecoder(bytes.NewReader(body))}
	d.dec.UseNumber()
	req.n, req.sample, req.seed, req.probabilities, req.ruleRows = 0, false, 0, false, 0
	out := &inferRequest{}
	var inputs []*v2Input
	seenInputs := false
	err := d.object("", func(key, at string) *reqError {
		switch key {
		case "id":
			s, err := d.str(at)
			out.id = &s
			return err
		case "parameters":
			return d.emptyParameters(at)
		case "inputs":
			seenInputs = true
			return d.array(at, func(i int, at string) *reqError {
				in, err := d.input(at)
				inputs = append(inputs, in)
				return err
			})
		case "outputs":
			out.outputs = []string{}
			return d.array(at, func(i int, at string) *reqError {
				name, err := d.output(at)
				if err != nil {
					return err
				}
				if !validOutput(m, name) {
					return newError(kindBadRequest, at+".name", "%s.name %.64q is not an output of the model (%s)", at, name, outputNames(m))
				}
				if slices.Contains(out.outputs, name) {
					return newError(kindBadRequest, at+".name", "%s.name: output %q is requested twice", at, name)
				}
				out.outputs = append(out.outputs, name)
				return nil
			})
		}
		return unknownV2(at)
	})
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, newError(kindBadJSON, "", "malformed JSON: data after the request object")
	}
	if !seenInputs {
		return nil, newError(kindBadRequest, "inputs", "key inputs is missing")
	}
	return out, d.observations(inputs, lay, m, maxBatch, req)
}

// observations checks the decoded inputs against the model and writes
// them, observation-major, into req.obs.
func (d *v2decoder) observations(inputs []*v2Input, lay *layout, m *v2Model, maxBatch int, req *actRequest) *reqError {
	var byKey [numKeys]*v2Input
	var rule *v2Input // rule_targets, for a residual policy
	for i, in := range inputs {
		at := "inputs[" + strconv.Itoa(i) + "]"
		for j, k := range []string{"name", "shape", "datatype", "data"} {
			if !in.seen[j] {
				return newError(kindBadRequest, at+"."+k, "key %s.%s is missing", at, k)
			}
		}
		k := slices.Index(keyNames[:], in.name)
		var want []int
		switch {
		case in.name == ruleTargetsKey && m.rule > 0:
			if rule != nil {
				return newError(kindBadRequest, at+".name", "%s.name: input %q is given twice", at, in.name)
			}
			rule, want = in, []int{m.rule}
		case in.name == ruleTargetsKey:
			return newError(kindBadRequest, at+".name", "%s.name: input rule_targets applies only to a residual policy; this model is not one (it reads %s)", at, inputNames(m))
		case k < 0 || m.shapes[k] == nil:
			return newError(kindBadRequest, at+".name", "%s.name %.64q is not an input of the model (%s)", at, in.name, inputNames(m))
		case byKey[k] != nil:
			return newError(kindBadRequest, at+".name", "%s.name: input %q is given twice", at, in.name)
		default:
			byKey[k], want = in, m.shapes[k]
		}
		if in.datatype != "FP32" && in.datatype != "FP64" {
			return newError(kindBadRequest, at+".datatype", "%s.datatype %.16q: input %s is FP32 (FP64 accepted)", at, in.datatype, in.name)
		}
		if len(in.shape) != 1+len(want) || !slices.Equal(in.shape[1:], want) {
			return newError(kindBadRequest, at+".shape", "%s.shape %v: input %s has shape [batch, %s]", at, in.shape, in.name, dims(want))
		}
		n := in.shape[0]
		if n < 1 {
			return newError(kindBadRequest, at+".shape", "%s.shape %v: the batch size must be at least 1", at, in.shape)
		}
		if n > maxBatch {
			return newError(kindBatchTooLarge, at+".shape", "%s.shape %v: batch of %d observations, limit %d", at, in.shape, n, maxBatch)
		}
		if req.n == 0 {
			req.n = n
		} else if n != req.n {
			return newError(kindBadRequest, at+".shape", "%s.shape %v: batch size %d, an earlier input has %d", at, in.shape, n, req.n)
		}
		size := n
		for _, w := range want {
			size *= w
		}
		flat := len(in.dataDims) == 1 && in.dataDims[0] == size
		if !flat && !slices.Equal(in.dataDims, in.shape) {
			return newError(kindInvalid, at+".data", "%s.data has %s values, shape %v needs %d (flat, row-major) or nesting %v", at, dims(in.dataDims), in.shape, size, in.shape)
		}
	}
	for k := range numKeys {
		if m.shapes[k] != nil && byKey[k] == nil {
			return newError(kindBadRequest, "inputs", "input %s is missing (the model reads %s)", keyNames[k], inputNames(m))
		}
	}
	if m.rule > 0 && rule == nil {
		return newError(kindBadRequest, "inputs", "input rule_targets is missing: this residual policy needs its base rule's target per task (millicores; the model reads %s)", inputNames(m))
	}
	req.obs = grow(req.obs, req.n*lay.size)
	for k, in := range byKey {
		if in == nil {
			continue
		}
		w := lay.n[k]
		for r := range req.n {
			row := req.obs[r*lay.size+lay.off[k] : r*lay.size+lay.off[k]+w]
			copy(row, in.data[r*w:(r+1)*w])
			for j, v := range row {
				if i := lay.off[k] + j; !(v >= lay.low[i] && v <= lay.high[i]) {
					at := "inputs[" + strconv.Itoa(slices.Index(inputs, in)) + "].data[" + strconv.Itoa(r*w+j) + "]"
					return newError(kindInvalid, at, "%s = %v (observation %d, %s[%d]) is outside [%v, %v]", at, v, r, in.name, j, lay.low[i], lay.high[i])
				}
			}
		}
	}
	if rule == nil {
		return nil
	}
	req.rule = append(req.rule[:0], rule.data...)
	req.ruleRows = req.n
	for i, v := range req.rule {
		if !(v >= 0 && v <= maxRuleTarget) {
			at := "inputs[" + strconv.Itoa(slices.Index(inputs, rule)) + "].data[" + strconv.Itoa(i) + "]"
			return newError(kindInvalid, at, "%s = %v millicores (observation %d, rule_targets[%d]) is outside [0, %v]", at, v, i/m.rule, i%m.rule, maxRuleTarget)
		}
	}
	return nil
}

func outputNames(m *v2Model) string {
	if m.rule == 0 {
		return v2Action + ", " + v2Value
	}
	return v2Action + ", " + v2Value + ", " + v2Targets
}

func inputNames(m *v2Model) string {
	var b []byte
	for k := range numKeys {
		if m.shapes[k] != nil {
			if len(b) > 0 {
				b = append(b, ", "...)
			}
			b = append(b, keyNames[k]...)
		}
	}
	if m.rule > 0 {
		b = append(b, ", "+ruleTargetsKey...)
	}
	return string(b)
}

func dims(s []int) string {
	var b []byte
	for i, v := range s {
		if i > 0 {
			b = append(b, "×"...)
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return string(b)
}

// v2decoder walks the JSON tokens of a request.
type v2decoder struct {
	dec *json.Decoder
}

func unknownV2(at string) *reqError {
	return newError(kindBadRequest, at, "unknown key %.80s", at)
}

func (d *v2decoder) token(at string) (json.Token, *reqError) {
	t, err := d.dec.Token()
	if err == io.EOF {
		return nil, newError(kindBadJSON, at, "malformed JSON: unexpected end of input at %s", whereV2(at))
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, newError(kindBadJSON, at, "malformed JSON at byte %d (%s): %v", se.Offset, whereV2(at), err)
		}
		return nil, newError(kindBadJSON, at, "malformed JSON (%s): %v", whereV2(at), err)
	}
	return t, nil
}

func whereV2(at string) string {
	if at == "" {
		return "the top level"
	}
	return at
}

func typeErrorV2(at string, t json.Token, want string) *reqError {
	return newError(kindBadRequest, at, "%s is %s, want %s", whereV2(at), policyset.TokenKind(t), want)
}

// object reads an object, calling field for each key (which consumes the
// value); a duplicate key is an error.
func (d *v2decoder) object(at string, field func(key, at string) *reqError) *reqError {
	t, err := d.token(at)
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return typeErrorV2(at, t, "an object")
	}
	return d.members(at, field)
}

func (d *v2decoder) members(at string, field func(key, at string) *reqError) *reqError {
	var seen []string
	for d.dec.More() {
		t, err := d.token(at)
		if err != nil {
			return err
		}
		key, _ := t.(string) // the decoder returns only strings in key position
		sub := key
		if at != "" {
			sub = at + "." + key
		}
		if slices.Contains(seen, key) {
			return newError(kindBadRequest, sub, "duplicate key %.80s", sub)
		}
		seen = append(seen, key)
		if err := field(key, sub); err != nil {
			return err
		}
	}
	_, err := d.token(at)
	return err
}

func (d *v2decoder) array(at string, elem func(i int, at string) *reqError) *reqError {
	t, err := d.token(at)
	if err != nil {
		return err
	}
	if t != json.Delim('[') {
		return typeErrorV2(at, t, "an array")
	}
	for i := 0; d.dec.More(); i++ {
		if err := elem(i, at+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	_, err = d.token(at)
	return err
}

func (d *v2decoder) str(at string) (string, *reqError) {
	t, err := d.token(at)
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", typeErrorV2(at, t, "a string")
	}
	return s, nil
}

// emptyParameters accepts a parameters object only when it is null or
// empty: the server knows no parameter.
func (d *v2decoder) emptyParameters(at string) *reqError {
	t, err := d.token(at)
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('{') {
		return typeErrorV2(at, t, "an object")
	}
	return d.members(at, func(key, at string) *reqError {
		return newError(kindBadRequest, at, "unknown parameter %.80s (the server takes none)", at)
	})
}

func (d *v2decoder) output(at string) (string, *reqError) {
	var name string
	seen := false
	err := d.object(at, func(key, at string) *reqError {
		switch key {
		case "name":
			seen = true
			var err *reqError
			name, err = d.str(at)
			return err
		case "parameters":
			return d.emptyParameters(at)
		}
		return unknownV2(at)
	})
	if err == nil && !seen {
		err = newError(kindBadRequest, at+".name", "key %s.name is missing", at)
	}
	return name, err
}

func (d *v2decoder) input(at string) (*v2Input, *reqError) {
	in := &v2Input{}
	err := d.object(at, func(key, at string) *reqError {
		var err *reqError
		switch key {
		case "name":
			in.seen[0] = true
			in.name, err = d.str(at)
		case "shape":
			in.seen[1] = true
			in.shape = []int{}
			err = d.array(at, func(_ int, at string) *reqError {
				t, err := d.token(at)
				if err != nil {
					return err
				}
				n, ok := t.(json.Number)
				if !ok {
					return typeErrorV2(at, t, "an integer")
				}
				v, perr := strconv.ParseInt(string(n), 10, 32)
				if perr != nil {
					return newError(kindBadRequest, at, "%s = %.40s is not a 32-bit integer", at, n)
				}
				in.shape = append(in.shape, int(v))
				return nil
			})
		case "datatype":
			in.seen[2] = true
			in.datatype, err = d.str(at)
		case "data":
			in.seen[3] = true
			err = d.data(in, at)
		case "parameters":
			err = d.emptyParameters(at)
		default:
			err = unknownV2(at)
		}
		return err
	})
	return in, err
}

// data reads a tensor's data, flat or nested (every array at one depth
// of the same length, holding only numbers or only arrays), into in.data,
// and its nesting into in.dataDims (the arrays' length at each depth).
func (d *v2decoder) data(in *v2Input, at string) *reqError {
	t, err := d.token(at)
	if err != nil {
		return err
	}
	if t != json.Delim('[') {
		return typeErrorV2(at, t, "an array")
	}
	var lens, kinds [maxNest]int // per depth: length (-1 unset), element kind (0 unset, 1 number, 2 array)
	for i := range lens {
		lens[i] = -1
	}
	deepest := 0
	var walk func(depth int, at string) *reqError // after the array's '['
	walk = func(depth int, at string) *reqError {
		deepest = max(deepest, depth)
		n := 0
		for ; d.dec.More(); n++ {
			sub := at + "[" + strconv.Itoa(n) + "]"
			t, err := d.token(sub)
			if err != nil {
				return err
			}
			kind := 1
			if t == json.Delim('[') {
				kind = 2
			}
			if kinds[depth] != 0 && kinds[depth] != kind {
				return newError(kindBadRequest, sub, "%s: data mixes numbers and arrays at one depth", sub)
			}
			kinds[depth] = kind
			if kind == 2 {
				if depth+1 >= maxNest {
					return newError(kindBadRequest, sub, "%s: data nested deeper than %d", sub, maxNest)
				}
				if err := walk(depth+1, sub); err != nil {
					return err
				}
				continue
			}
			num, ok := t.(json.Number)
			if !ok {
				return typeErrorV2(sub, t, "a number")
			}
			v, perr := strconv.ParseFloat(string(num), 64)
			if perr != nil || math.IsInf(v, 0) {
				return newError(kindInvalid, sub, "%s = %.40s overflows float64", sub, num)
			}
			in.data = append(in.data, v)
		}
		if lens[depth] >= 0 && lens[depth] != n {
			return newError(kindInvalid, at, "%s has %d elements, another array at its depth %d", at, n, lens[depth])
		}
		lens[depth] = n
		_, err := d.token(at) // ']'
		return err
	}
	if err := walk(0, at); err != nil {
		return err
	}
	in.dataDims = append([]int(nil), lens[:deepest+1]...)
	return nil
}

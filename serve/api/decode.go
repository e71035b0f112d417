package api

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Keys of the observation object, in flattening order (env.Observation.Flatten).
const (
	keyApp = iota
	keyServer
	keyTask
	numKeys
)

var keyNames = [numKeys]string{"app", "server", "task"}

// layout says where the values of each observation key go in a policy's
// flat observation, and which values are allowed there.
type layout struct {
	size      int          // flat observation length
	off       [numKeys]int // offset of each key in the flat vector
	n         [numKeys]int // values of each key; -1: the policy has no such key
	low, high []float64    // flat bounds, size entries each
	// rule is the number of base-rule targets (rule_targets) an
	// observation of a residual policy comes with, one per task; 0 for
	// any other policy, which refuses them.
	rule int
}

// ruleTargetsKey is the request field (and the v2 input) carrying a
// residual policy's base-rule targets; maxRuleTarget bounds them
// (millicores, as residual.Info's allocation bounds).
const (
	ruleTargetsKey = "rule_targets"
	maxRuleTarget  = 1e9
)

// actRequest is a decoded act or batch request. Its slices are reused
// from request to request (see scratch), so decoding does not allocate once
// they have grown.
type actRequest struct {
	obs           []float64 // n·size values, observation-major
	n             int       // observations decoded
	sample        bool      // sample actions (else per-dimension argmax)
	seed          uint64    // seed of the sampling stream
	probabilities bool      // report per-dimension action probabilities
	rule          []float64 // n·lay.rule base-rule targets (millicores), observation-major
	ruleRows      int       // rows of rule_targets decoded

	key []byte // scratch for decoding escaped keys
}

// decodeAct parses body, a single-observation request ({"observation": …})
// or, if batch, a batch request ({"observations": [ … ]} with at most
// maxBatch entries), into req against lay. It reports the first problem in
// document order (option conflicts and bounds after that) as an *reqError:
// 400 for anything that is not a JSON document of the request schema, 422
// for values that do not fit the policy, 413 for too many observations.
// It never panics and never reads beyond body.
func decodeAct(body []byte, lay *layout, batch bool, maxBatch int, req *actRequest) *reqError {
	d := decoder{b: body, lay: lay, req: req, batch: batch, max: maxBatch}
	req.n, req.sample, req.seed, req.probabilities, req.ruleRows = 0, false, 0, false, 0
	if err := d.request(); err != nil {
		return err
	}
	if err := checkBounds(req, lay, batch); err != nil {
		return err
	}
	return checkRuleTargets(req, lay, batch)
}

// decoder is a single-pass JSON scanner specialised to the request schema:
// it writes numbers straight into the flat observation buffer and rejects,
// rather than skips, anything it does not expect, so it never recurses.
type decoder struct {
	b     []byte
	i     int
	lay   *layout
	req   *actRequest
	batch bool
	max   int
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// syntax reports malformed JSON at the current offset.
func (d *decoder) syntax(what string) *reqError {
	if d.i >= len(d.b) {
		return newError(kindBadJSON, "", "malformed JSON: unexpected end of input, want %s", what)
	}
	return newError(kindBadJSON, "", "malformed JSON at byte %d: unexpected %s, want %s", d.i, quoteByte(d.b[d.i]), what)
}

func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// peekKind names the JSON value starting at the current offset, for type errors.
func (d *decoder) peekKind() string {
	if d.i >= len(d.b) {
		return "nothing"
	}
	switch c := d.b[d.i]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return "not a JSON value"
}

// typeError reports a value of the wrong JSON type at field; if the value
// is not JSON at all, it is a syntax error instead.
func (d *decoder) typeError(field, want string) *reqError {
	k := d.peekKind()
	if k == "not a JSON value" || k == "nothing" {
		return d.syntax(want)
	}
	return newError(kindBadRequest, field, "%s is %s, want %s", field, k, want)
}

func (d *decoder) request() *reqError {
	d.ws()
	if d.i >= len(d.b) {
		return newError(kindBadJSON, "", "empty body, want a JSON object")
	}
	if d.b[d.i] != '{' {
		return d.typeError("body", "a JSON object")
	}
	d.i++
	var seen struct{ obs, det, sample, seed, probs, rule bool }
	var det bool
	obsKey := "observation"
	if d.batch {
		obsKey = "observations"
	}
	err := d.object(func(key []byte) *reqError {
		switch string(key) {
		case obsKey:
			if seen.obs {
				return dup(obsKey)
			}
			seen.obs = true
			if d.batch {
				return d.observations()
			}
			d.req.n = 1
			return d.observation(0)
		case "deterministic":
			if seen.det {
				return dup("deterministic")
			}
			seen.det = true
			v, err := d.boolean("deterministic")
			det = v
			return err
		case "sample":
			if seen.sample {
				return dup("sample")
			}
			seen.sample = true
			v, err := d.boolean("sample")
			d.req.sample = v
			return err
		case "probabilities":
			if seen.probs {
				return dup("probabilities")
			}
			seen.probs = true
			v, err := d.boolean("probabilities")
			d.req.probabilities = v
			return err
		case "seed":
			if seen.seed {
				return dup("seed")
			}
			seen.seed = true
			return d.seed()
		case ruleTargetsKey:
			if seen.rule {
				return dup(ruleTargetsKey)
			}
			seen.rule = true
			if d.lay.rule == 0 {
				return newError(kindBadRequest, ruleTargetsKey, "rule_targets applies only to a residual policy; this policy is not one")
			}
			return d.ruleTargets()
		}
		return unknown("", key)
	})
	if err != nil {
		return err
	}
	d.ws()
	if d.i != len(d.b) {
		return newError(kindBadJSON, "", "malformed JSON at byte %d: data after the top-level object", d.i)
	}
	if !seen.obs {
		return newError(kindBadRequest, obsKey, "%s is missing", obsKey)
	}
	if d.lay.rule > 0 && !seen.rule {
		return newError(kindBadRequest, ruleTargetsKey, "rule_targets is missing: this residual policy needs its base rule's target per task (millicores)")
	}
	switch {
	case seen.det && seen.sample && det == d.req.sample:
		return newError(kindBadRequest, "sample", "sample %v conflicts with deterministic %v", d.req.sample, det)
	case seen.det && !det:
		d.req.sample = true
	}
	if d.req.sample && !seen.seed {
		return newError(kindBadRequest, "seed", "seed is required when sampling")
	}
	if !d.req.sample && seen.seed {
		return newError(kindBadRequest, "seed", "seed applies only when sampling")
	}
	return nil
}

func dup(field string) *reqError {
	return newError(kindBadRequest, field, "%s appears twice", field)
}

func unknown(prefix string, key []byte) *reqError {
	k := string(key)
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	if prefix != "" {
		k = prefix + "." + k
	}
	return newError(kindBadRequest, k, "unknown field %s", strconv.Quote(k))
}

// object parses the members of an object whose '{' has been consumed,
// calling member with each (unescaped) key, the value still unread.
func (d *decoder) object(member func(key []byte) *reqError) *reqError {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return d.syntax("a string key")
		}
		key, err := d.key()
		if err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return d.syntax("':'")
		}
		d.i++
		d.ws()
		if err := member(key); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("',' or '}'")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.syntax("',' or '}'")
		}
	}
}

// key parses a JSON string at the current offset ('"' already checked)
// and returns its unescaped bytes: a subslice of the body when it has no
// escapes, else req.key.
func (d *decoder) key() ([]byte, *reqError) {
	d.i++
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], nil
		case c == '\\':
			return d.escapedKey(start)
		case c < 0x20:
			return nil, d.syntax("a string character (control characters must be escaped)")
		}
		d.i++
	}
	return nil, d.syntax("'\"'")
}

// escapedKey continues key at the first backslash, unescaping into req.key.
func (d *decoder) escapedKey(start int) ([]byte, *reqError) {
	k := append(d.req.key[:0], d.b[start:d.i]...)
	defer func() { d.req.key = k[:0] }()
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return k, nil
		case c < 0x20:
			return nil, d.syntax("a string character (control characters must be escaped)")
		case c != '\\':
			k = append(k, c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(d.b) {
			return nil, d.syntax("an escape character")
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			k = append(k, e)
		case 'b':
			k = append(k, '\b')
		case 'f':
			k = append(k, '\f')
		case 'n':
			k = append(k, '\n')
		case 'r':
			k = append(k, '\r')
		case 't':
			k = append(k, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.syntax("four hex digits")
			}
			if utf16IsSurrogate(r) {
				// A high surrogate followed by \u low surrogate is one
				// rune; anything else is U+FFFD, as encoding/json does.
				r2 := rune(-1)
				if r < 0xdc00 && d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if v, ok := d.hex4(); ok && v >= 0xdc00 && v < 0xe000 {
						r2 = v
					} else {
						d.i = save
					}
				}
				if r2 >= 0 {
					r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
				} else {
					r = utf8.RuneError
				}
			}
			k = utf8.AppendRune(k, r)
		default:
			d.i--
			return nil, d.syntax("a valid escape character")
		}
	}
	return nil, d.syntax("'\"'")
}

func utf16IsSurrogate(r rune) bool { return r >= 0xd800 && r < 0xe000 }

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

func (d *decoder) literal(word string) bool {
	if bytes.HasPrefix(d.b[d.i:], []byte(word)) {
		d.i += len(word)
		return true
	}
	return false
}

func (d *decoder) boolean(field string) (bool, *reqError) {
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case 't':
			if d.literal("true") {
				return true, nil
			}
			return false, d.syntax("true")
		case 'f':
			if d.literal("false") {
				return false, nil
			}
			return false, d.syntax("false")
		}
	}
	return false, d.typeError(field, "true or false")
}

// number scans a JSON number token at the current offset and returns it
// (nil if there is none: the caller reports a type error).
func (d *decoder) number() ([]byte, *reqError) {
	start := d.i
	b := d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		if i > start {
			d.i = i
			return nil, d.syntax("a digit")
		}
		return nil, nil
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	default:
		if i > start {
			d.i = i
			return nil, d.syntax("a digit")
		}
		return nil, nil
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return nil, d.syntax("a digit after '.'")
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return nil, d.syntax("a digit in the exponent")
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		}
	}
	d.i = i
	return b[start:i], nil
}

func (d *decoder) seed() *reqError {
	tok, err := d.number()
	if err != nil {
		return err
	}
	if tok == nil {
		return d.typeError("seed", "an integer")
	}
	v, perr := strconv.ParseUint(string(tok), 10, 64)
	if perr != nil {
		return newError(kindBadRequest, "seed", "seed is %.40s, want an integer in [0, 18446744073709551615]", tok)
	}
	d.req.seed = v
	return nil
}

func (d *decoder) observations() *reqError {
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return d.typeError("observations", "an array of observation objects")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return newError(kindInvalid, "observations", "observations is empty, want 1 to %d observations", d.max)
	}
	for r := 0; ; r++ {
		if r >= d.max {
			return newError(kindBatchTooLarge, "observations", "observations has more than %d entries", d.max)
		}
		d.ws()
		d.req.n = r + 1
		if err := d.observation(r); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("',' or ']'")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.syntax("',' or ']'")
		}
	}
}

// obsField is the JSON path of observation r.
func (d *decoder) obsField(r int) string { return obsField(d.batch, r) }

func obsField(batch bool, r int) string {
	if batch {
		return "observations[" + strconv.Itoa(r) + "]"
	}
	return "observation"
}

// observation parses one observation object into row r of req.obs.
func (d *decoder) observation(r int) *reqError {
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.typeError(d.obsField(r), "an object with app, server and task arrays")
	}
	d.i++
	lay := d.lay
	need := (r + 1) * lay.size
	if cap(d.req.obs) < need {
		d.req.obs = append(d.req.obs[:cap(d.req.obs)], make([]float64, need-cap(d.req.obs))...)
	}
	d.req.obs = d.req.obs[:need]
	row := d.req.obs[r*lay.size : need]
	var seen [numKeys]bool
	err := d.object(func(key []byte) *reqError {
		k := -1
		for j, name := range keyNames {
			if string(key) == name {
				k = j
			}
		}
		if k < 0 {
			return unknown(d.obsField(r), key)
		}
		f := func() string { return d.obsField(r) + "." + keyNames[k] }
		if seen[k] {
			return dup(f())
		}
		seen[k] = true
		if lay.n[k] < 0 {
			return newError(kindInvalid, f(), "%s is not part of this policy's observation", f())
		}
		return d.vector(row[lay.off[k]:lay.off[k]+lay.n[k]], r, k)
	})
	if err != nil {
		return err
	}
	for k, n := range lay.n {
		if n >= 0 && !seen[k] {
			f := d.obsField(r) + "." + keyNames[k]
			return newError(kindBadRequest, f, "%s is missing", f)
		}
	}
	return nil
}

// vector parses an array of numbers into dst (key k of observation r),
// which must be filled exactly.
func (d *decoder) vector(dst []float64, r, k int) *reqError {
	return d.numbers(dst, func() string { return d.obsField(r) + "." + keyNames[k] })
}

// numbers parses an array of numbers into dst, which it must fill
// exactly; field names the array in errors (called only on one).
func (d *decoder) numbers(dst []float64, field func() string) *reqError {
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return d.typeError(field(), "an array of numbers")
	}
	d.i++
	d.ws()
	n := 0
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
	} else {
		for ; ; n++ {
			d.ws()
			tok, err := d.number()
			if err != nil {
				return err
			}
			if tok == nil {
				return d.typeError(field()+"["+strconv.Itoa(n)+"]", "a number")
			}
			v, ok := float(tok)
			if !ok {
				f := field() + "[" + strconv.Itoa(n) + "]"
				return newError(kindInvalid, f, "%s = %.40s is outside the range of float64", f, tok)
			}
			if n < len(dst) {
				dst[n] = v
			}
			d.ws()
			if d.i >= len(d.b) {
				return d.syntax("',' or ']'")
			}
			if d.b[d.i] == ',' {
				d.i++
				continue
			}
			if d.b[d.i] == ']' {
				d.i++
				n++
				break
			}
			return d.syntax("',' or ']'")
		}
	}
	if n != len(dst) {
		f := field()
		return newError(kindInvalid, f, "%s has %d values, want %d", f, n, len(dst))
	}
	return nil
}

// ruleTargets parses rule_targets: an array of lay.rule numbers, or in a
// batch an array of such arrays, one per observation (at most max).
func (d *decoder) ruleTargets() *reqError {
	w := d.lay.rule
	row := func(r int) []float64 {
		need := (r + 1) * w
		if cap(d.req.rule) < need {
			d.req.rule = append(d.req.rule[:cap(d.req.rule)], make([]float64, need-cap(d.req.rule))...)
		}
		d.req.rule = d.req.rule[:need]
		return d.req.rule[r*w : need]
	}
	if !d.batch {
		d.req.ruleRows = 1
		return d.numbers(row(0), func() string { return ruleTargetsKey })
	}
	if d.i >= len(d.b) || d.b[d.i] != '[' {
		return d.typeError(ruleTargetsKey, "an array of arrays of numbers, one per observation")
	}
	d.i++
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return nil // the row count is checked against the observations'
	}
	for r := 0; ; r++ {
		if r >= d.max {
			return newError(kindBatchTooLarge, ruleTargetsKey, "rule_targets has more than %d rows", d.max)
		}
		d.ws()
		d.req.ruleRows = r + 1
		if err := d.numbers(row(r), func() string { return ruleTargetsKey + "[" + strconv.Itoa(r) + "]" }); err != nil {
			return err
		}
		d.ws()
		if d.i >= len(d.b) {
			return d.syntax("',' or ']'")
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.syntax("',' or ']'")
		}
	}
}

func elemField(field string, k, i int) string {
	return field + "." + keyNames[k] + "[" + strconv.Itoa(i) + "]"
}

// checkRuleTargets reports rule_targets whose rows do not match the
// observations, or the first target outside [0, maxRuleTarget].
func checkRuleTargets(req *actRequest, lay *layout, batch bool) *reqError {
	if lay.rule == 0 {
		return nil
	}
	if req.ruleRows != req.n {
		return newError(kindInvalid, ruleTargetsKey, "rule_targets has %d rows for %d observations", req.ruleRows, req.n)
	}
	for i, v := range req.rule[:req.n*lay.rule] {
		if v >= 0 && v <= maxRuleTarget {
			continue
		}
		f := ruleTargetsKey + "[" + strconv.Itoa(i) + "]"
		if batch {
			f = ruleTargetsKey + "[" + strconv.Itoa(i/lay.rule) + "][" + strconv.Itoa(i%lay.rule) + "]"
		}
		return newError(kindInvalid, f, "%s = %v millicores is outside [0, %v]", f, v, maxRuleTarget)
	}
	return nil
}

// checkBounds reports the first value outside its declared [low, high].
func checkBounds(req *actRequest, lay *layout, batch bool) *reqError {
	for r := range req.n {
		row := req.obs[r*lay.size : (r+1)*lay.size]
		for i, v := range row {
			if v >= lay.low[i] && v <= lay.high[i] {
				continue
			}
			field := obsField(batch, r)
			for k := range numKeys {
				if n := lay.n[k]; n >= 0 && i >= lay.off[k] && i < lay.off[k]+n {
					f := elemField(field, k, i-lay.off[k])
					return newError(kindInvalid, f, "%s = %v is outside [%v, %v]", f, v, lay.low[i], lay.high[i])
				}
			}
		}
	}
	return nil
}

package ops

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"
)

// --- WC ---

// WC is word count (clasp.WC): split → count (keyed by word). A sentence
// of the generated text holds 10 to 14 words, 12 on average.
func WC() App {
	return App{
		Name:      "wc",
		Operators: []Spec{spec("split", false, wcSplit), spec("count", true, wcCount)},
		Edges:     [][2]int{{0, 1}},
		NewSource: newWCSource,
	}
}

// MaxWord is the longest word split accepts, bytes.
const MaxWord = 64

// wcSplit sends each space-separated word to count, keyed by the word.
func wcSplit(in Record, _ State, out Emitter) error {
	p := in.Payload
	if len(bytes.TrimSpace(p)) == 0 {
		return opErr("wc", "split", errors.New("empty sentence"))
	}
	for pass := range 2 { // validate, then emit: a bad sentence emits nothing
		for q := p; len(q) > 0; {
			i := bytes.IndexByte(q, ' ')
			w := q
			if i >= 0 {
				w, q = q[:i], q[i+1:]
			} else {
				q = nil
			}
			switch {
			case len(w) == 0:
			case len(w) > MaxWord:
				return opErr("wc", "split", errors.New("word longer than 64 bytes"))
			case pass == 1:
				out.Emit(1, WordKey(w), w)
			}
		}
	}
	return nil
}

// WordKey is the key of a word (FNV-1a): count's state for word w is
// under WordKey(w).
func WordKey(w []byte) uint64 { return hashBytes(w) }

// wcCount adds one to the word's count (a uvarint).
func wcCount(in Record, st State, _ Emitter) error {
	if len(in.Payload) == 0 || len(in.Payload) > MaxWord {
		return opErr("wc", "count", errors.New("bad word"))
	}
	if WordKey(in.Payload) != in.Key {
		return opErr("wc", "count", errors.New("key is not the word's"))
	}
	n, err := readCount(st, in.Key)
	if err != nil {
		return opErr("wc", "count", err)
	}
	old, _ := st.Get(in.Key)
	st.Put(in.Key, putUvarint(stateBuf(old, 10), n+1))
	return nil
}

// readCount returns the uvarint count under key (0 if none).
func readCount(st State, key uint64) (uint64, error) {
	b, ok := st.Get(key)
	if !ok {
		return 0, nil
	}
	r := reader{b: b}
	n := r.uvarint()
	if err := r.done("count state"); err != nil {
		return 0, err
	}
	return n, nil
}

// Count decodes a count written by WC's count (and the other counters).
func Count(state []byte) (uint64, error) {
	r := reader{b: state}
	n := r.uvarint()
	return n, r.done("count state")
}

// --- SD ---

// SDWindow is the moving average's window, readings; SpikeThreshold the
// relative deviation from it that is a spike (the storm-benchmark spike
// detection's defaults, 1,000 and 0.03, with a shorter window for a
// sensor's far sparser readings).
const (
	SDWindow       = 10
	SpikeThreshold = 0.03
)

// SD is spike detection (clasp.SD): moving average (keyed by sensor) →
// spike detect.
func SD() App {
	return App{
		Name:      "sd",
		Operators: []Spec{spec("moving-average", true, sdAverage), spec("spike-detect", false, sdSpike)},
		Edges:     [][2]int{{0, 1}},
		NewSource: newSDSource,
	}
}

// fields splits s on single spaces into exactly len(out) fields.
func fields(s []byte, out [][]byte) bool {
	for i := range out {
		j := bytes.IndexByte(s, ' ')
		if i == len(out)-1 {
			if j >= 0 {
				return false
			}
			out[i] = s
			return len(s) > 0
		}
		if j <= 0 {
			return false
		}
		out[i], s = s[:j], s[j+1:]
	}
	return true
}

func parseF(b []byte) (float64, bool) {
	x, err := strconv.ParseFloat(string(b), 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

// sdAverage parses an Intel lab reading and adds its temperature to the
// mote's window (state: count, next slot, SDWindow values), sending the
// reading and the window's mean to spike-detect.
func sdAverage(in Record, st State, out Emitter) error {
	var f [8][]byte
	if !fields(in.Payload, f[:]) {
		return opErr("sd", "moving-average", errors.New("want 8 space-separated fields"))
	}
	mote, err := strconv.ParseUint(string(f[3]), 10, 32)
	if err != nil {
		return opErr("sd", "moving-average", errors.New("bad mote id"))
	}
	epoch, err := strconv.ParseUint(string(f[2]), 10, 64)
	if err != nil {
		return opErr("sd", "moving-average", errors.New("bad epoch"))
	}
	t, ok := parseF(f[4])
	if !ok {
		return opErr("sd", "moving-average", errors.New("bad temperature"))
	}
	key := mix(mote)
	if key != in.Key {
		return opErr("sd", "moving-average", errKey)
	}
	old, ok := st.Get(key)
	const n = 2 + 8*SDWindow
	if ok && (len(old) != n || old[0] > SDWindow || old[1] >= SDWindow) {
		return opErr("sd", "moving-average", errors.New("corrupt state"))
	}
	buf := old
	if !ok {
		buf = make([]byte, n)
	}
	cnt, next := int(buf[0]), int(buf[1])
	putF64(buf[2+8*next:2+8*next], t)
	cnt, next = min(cnt+1, SDWindow), (next+1)%SDWindow
	buf[0], buf[1] = byte(cnt), byte(next)
	sum := 0.0
	for i := range cnt {
		sum += math.Float64frombits(leU64(buf[2+8*i : 10+8*i]))
	}
	st.Put(key, buf)
	sc := getScratch()
	defer putScratch(sc)
	sc.b = putF64(putF64(putU64(putU64(sc.b, mote), epoch), t), sum/float64(cnt))
	out.Emit(1, key, sc.b)
	return nil
}

// sdSpike flags a reading that deviates from its moving average by more
// than SpikeThreshold (relative) and formats an alert for it.
func sdSpike(in Record, _ State, _ Emitter) error {
	r := reader{b: in.Payload}
	mote, epoch, t, avg := r.u64(), r.u64(), r.f64(), r.f64()
	if err := r.done("reading"); err != nil {
		return opErr("sd", "spike-detect", err)
	}
	if math.Abs(t-avg) > SpikeThreshold*math.Abs(avg) {
		sc := getScratch()
		b := append(sc.b, "spike mote="...)
		b = strconv.AppendUint(b, mote, 10)
		b = append(b, " epoch="...)
		b = strconv.AppendUint(b, epoch, 10)
		b = append(b, " value="...)
		sc.b = strconv.AppendFloat(b, t, 'f', 4, 64)
		putScratch(sc)
	}
	return nil
}

// --- AA ---

// WindowMS is the campaign counts' tumbling window, ms (the Yahoo
// benchmark's 10 s).
const WindowMS = 10_000

// AA is the Yahoo streaming benchmark's advertising analytics (clasp.AA):
// deserialize → filter (event_type "view": one type in three) →
// projection (ad id, event time) → join ad → campaign (keyed by ad) →
// campaign-count (10 s windows, keyed by campaign).
func AA() App {
	return App{
		Name: "aa",
		Operators: []Spec{
			spec("deserialize", false, aaDeserialize), spec("filter", false, aaFilter),
			spec("projection", false, aaProject), spec("join", true, aaJoin),
			spec("campaign-count", true, aaCount),
		},
		Edges:     [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}},
		NewSource: newAASource,
	}
}

// adEvent is the deserialised event: event type (index in eventTypes), ad
// type, event time (ms), ad, user and page ids, IP address.
type adEvent struct {
	event, adType      byte
	time               uint64
	ad, user, page, ip []byte
}

func (e *adEvent) append(b []byte) []byte {
	b = putU64(append(b, e.event, e.adType), e.time)
	return putBytes(putBytes(putBytes(putBytes(b, e.ad), e.user), e.page), e.ip)
}

func (e *adEvent) decode(b []byte) error {
	r := reader{b: b}
	e.event, e.adType, e.time = r.byte1(), r.byte1(), r.u64()
	e.ad, e.user, e.page, e.ip = r.bytes(), r.bytes(), r.bytes(), r.bytes()
	return r.done("ad event")
}

var errAA = errors.New("ops: aa event")

// parseAdEvent deserialises one benchmark event: a JSON object whose seven
// members are strings; unknown members are skipped.
func parseAdEvent(b []byte, e *adEvent) error {
	s := jscan{b: b}
	s.ws()
	if !s.eat('{') {
		return errors.Join(errAA, errors.New("want an object"))
	}
	var have uint8
	for first := true; ; first = false {
		s.ws()
		if s.eat('}') {
			break
		}
		if !first && !s.eat(',') {
			return errors.Join(errAA, errors.New("want , or }"))
		}
		s.ws()
		key, ok := s.str()
		if !ok || !s.colon() {
			return errors.Join(errAA, errors.New("want a member name"))
		}
		bit := uint8(0)
		switch string(key) {
		case "user_id", "page_id", "ad_id", "ad_type", "event_type", "event_time", "ip_address":
			v, ok := s.str()
			if !ok {
				return errors.Join(errAA, errors.New("member "+string(key)+" is not a string"))
			}
			switch string(key) {
			case "user_id":
				e.user, bit = v, 1
			case "page_id":
				e.page, bit = v, 2
			case "ad_id":
				e.ad, bit = v, 4
			case "ad_type":
				i := indexOf(adTypes[:], v)
				if i < 0 {
					return errors.Join(errAA, errors.New("unknown ad_type"))
				}
				e.adType, bit = byte(i), 8
			case "event_type":
				i := indexOf(eventTypes[:], v)
				if i < 0 {
					return errors.Join(errAA, errors.New("unknown event_type"))
				}
				e.event, bit = byte(i), 16
			case "event_time":
				t, err := strconv.ParseUint(string(v), 10, 64)
				if err != nil {
					return errors.Join(errAA, errors.New("bad event_time"))
				}
				e.time, bit = t, 32
			case "ip_address":
				e.ip, bit = v, 64
			}
			if have&bit != 0 {
				return errors.Join(errAA, errors.New("member "+string(key)+" given twice"))
			}
			have |= bit
		default:
			if !s.skip(0) {
				return errors.Join(errAA, errors.New("bad value"))
			}
		}
	}
	if s.ws(); s.i != len(s.b) {
		return errors.Join(errAA, errors.New("trailing data"))
	}
	if have != 127 {
		return errors.Join(errAA, errors.New("members missing"))
	}
	if len(e.ad) == 0 || len(e.ad) > 64 {
		return errors.Join(errAA, errors.New("bad ad_id"))
	}
	return nil
}

func indexOf(list []string, v []byte) int {
	for i, s := range list {
		if string(v) == s {
			return i
		}
	}
	return -1
}

func aaDeserialize(in Record, _ State, out Emitter) error {
	var e adEvent
	if err := parseAdEvent(in.Payload, &e); err != nil {
		return opErr("aa", "deserialize", err)
	}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = e.append(sc.b)
	out.Emit(1, hashBytes(e.ad), sc.b)
	return nil
}

func aaFilter(in Record, _ State, out Emitter) error {
	var e adEvent
	if err := e.decode(in.Payload); err != nil {
		return opErr("aa", "filter", err)
	}
	if e.event == 0 { // "view"
		out.Emit(2, in.Key, in.Payload)
	}
	return nil
}

// aaProject keeps the ad id and the event time, keyed by ad.
func aaProject(in Record, _ State, out Emitter) error {
	var e adEvent
	if err := e.decode(in.Payload); err != nil {
		return opErr("aa", "projection", err)
	}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = putBytes(putU64(sc.b, e.time), e.ad)
	out.Emit(3, hashBytes(e.ad), sc.b)
	return nil
}

// Campaign returns the campaign of ad i.
func Campaign(ad int) int { return int(mix(uint64(ad)|3<<40) % Campaigns) }

// adCampaigns is the ad → campaign table (the benchmark keeps it in
// Redis): built once, read-only after.
var adCampaigns = sync.OnceValue(func() map[string]uint16 {
	m := make(map[string]uint16, Ads)
	var b [36]byte
	for ad := range Ads {
		m[string(adUUID(b[:0], ad))] = uint16(Campaign(ad))
	}
	return m
})

// aaJoin joins the ad with its campaign: the key's state caches the
// campaign (uvarint) and counts the ad's views (uvarint), so the table is
// read once per ad per owner.
func aaJoin(in Record, st State, out Emitter) error {
	r := reader{b: in.Payload}
	t, ad := r.u64(), r.bytes()
	if err := r.done("projection"); err != nil {
		return opErr("aa", "join", err)
	}
	key := hashBytes(ad)
	if key != in.Key {
		return opErr("aa", "join", errKey)
	}
	var camp, views uint64
	if old, ok := st.Get(key); ok {
		sr := reader{b: old}
		camp, views = sr.uvarint(), sr.uvarint()
		if sr.done("join state") != nil || camp >= Campaigns {
			return opErr("aa", "join", errors.New("corrupt state"))
		}
	} else {
		c, ok := adCampaigns()[string(ad)]
		if !ok {
			return opErr("aa", "join", errors.New("unknown ad"))
		}
		camp = uint64(c)
	}
	old, _ := st.Get(key)
	st.Put(key, putUvarint(putUvarint(stateBuf(old, 20), camp), views+1))
	sc := getScratch()
	defer putScratch(sc)
	sc.b = putU64(putU64(sc.b, camp), t)
	out.Emit(4, mix(camp), sc.b)
	return nil
}

// aaCount counts views per campaign in tumbling windows of WindowMS. State:
// current window, its count, the previous window, its count (uvarints); a
// late event of the previous window still counts, an older one is dropped
// as the benchmark's does.
func aaCount(in Record, st State, _ Emitter) error {
	r := reader{b: in.Payload}
	camp, t := r.u64(), r.u64()
	if err := r.done("campaign event"); err != nil {
		return opErr("aa", "campaign-count", err)
	}
	if camp >= Campaigns {
		return opErr("aa", "campaign-count", errors.New("unknown campaign"))
	}
	key := mix(camp)
	if key != in.Key {
		return opErr("aa", "campaign-count", errKey)
	}
	w := t / WindowMS
	var s [4]uint64
	old, ok := st.Get(key)
	if ok {
		sr := reader{b: old}
		for i := range s {
			s[i] = sr.uvarint()
		}
		if sr.done("campaign state") != nil {
			return opErr("aa", "campaign-count", errors.New("corrupt state"))
		}
	} else {
		s[0] = w
	}
	switch {
	case w == s[0]:
		s[1]++
	case w > s[0]:
		s = [4]uint64{w, 1, s[0], s[1]}
	case w == s[2]:
		s[3]++
	}
	buf := stateBuf(old, 40)
	for _, v := range s {
		buf = putUvarint(buf, v)
	}
	st.Put(key, buf)
	return nil
}

// --- PL ---

// PL is the pipeline (clasp.PL): trans (parse) → filter1 (amount above
// $50: one in two) → join (keyed by item, with the catalogue) → filter2
// (categories divisible by 3: one in three) → aggregate (keyed by
// category) → sink.
func PL() App {
	return App{
		Name: "pl",
		Operators: []Spec{
			spec("trans", false, plTrans), spec("filter1", false, plFilter1),
			spec("join", true, plJoin), spec("filter2", false, plFilter2),
			spec("aggregate", true, plAggregate), spec("sink", false, plSink),
		},
		Edges:     [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}},
		NewSource: newPLSource,
	}
}

// Category returns the catalogue category of item i.
func Category(item uint64) uint64 { return mix(item|4<<40) % Categories }

// tx is PL's transaction: id, user, item, amount (cents), time, category.
type tx struct{ id, user, item, cents, ts, cat uint64 }

func (t *tx) append(b []byte) []byte {
	return putU64(putU64(putU64(putU64(putU64(putU64(b, t.id), t.user), t.item), t.cents), t.ts), t.cat)
}

func (t *tx) decode(b []byte) error {
	r := reader{b: b}
	t.id, t.user, t.item, t.cents, t.ts, t.cat = r.u64(), r.u64(), r.u64(), r.u64(), r.u64(), r.u64()
	if err := r.done("transaction"); err != nil {
		return err
	}
	if t.item >= Items || t.cat >= Categories {
		return errors.New("ops: transaction: item or category out of range")
	}
	return nil
}

func plTrans(in Record, _ State, out Emitter) error {
	var c [5][]byte
	if !splitCSV(in.Payload, c[:]) {
		return opErr("pl", "trans", errors.New("want 5 comma-separated columns"))
	}
	var t tx
	var err [4]error
	t.id, err[0] = strconv.ParseUint(string(c[0]), 10, 64)
	t.user, err[1] = strconv.ParseUint(string(c[1]), 10, 64)
	t.item, err[2] = strconv.ParseUint(string(c[2]), 10, 64)
	t.ts, err[3] = strconv.ParseUint(string(c[4]), 10, 64)
	amount, ok := parseF(c[3])
	if err != [4]error{} || !ok || amount < 0 || amount > 1e9 || t.item >= Items {
		return opErr("pl", "trans", errors.New("bad column"))
	}
	t.cents = uint64(math.Round(amount * 100))
	sc := getScratch()
	defer putScratch(sc)
	sc.b = t.append(sc.b)
	out.Emit(1, mix(t.id), sc.b)
	return nil
}

func plFilter1(in Record, _ State, out Emitter) error {
	var t tx
	if err := t.decode(in.Payload); err != nil {
		return opErr("pl", "filter1", err)
	}
	if t.cents > 5000 {
		out.Emit(2, mix(t.item), in.Payload)
	}
	return nil
}

// plJoin joins the transaction with its item's catalogue entry (the
// category) and keeps the item's purchase count and revenue (uvarints).
func plJoin(in Record, st State, out Emitter) error {
	var t tx
	if err := t.decode(in.Payload); err != nil {
		return opErr("pl", "join", err)
	}
	key := mix(t.item)
	if key != in.Key {
		return opErr("pl", "join", errKey)
	}
	var n, rev uint64
	old, ok := st.Get(key)
	if ok {
		r := reader{b: old}
		n, rev = r.uvarint(), r.uvarint()
		if r.done("item state") != nil {
			return opErr("pl", "join", errors.New("corrupt state"))
		}
	}
	st.Put(key, putUvarint(putUvarint(stateBuf(old, 20), n+1), rev+t.cents))
	t.cat = Category(t.item)
	sc := getScratch()
	defer putScratch(sc)
	sc.b = t.append(sc.b)
	out.Emit(3, mix(t.id), sc.b)
	return nil
}

func plFilter2(in Record, _ State, out Emitter) error {
	var t tx
	if err := t.decode(in.Payload); err != nil {
		return opErr("pl", "filter2", err)
	}
	if t.cat%3 == 0 {
		out.Emit(4, mix(t.cat), in.Payload)
	}
	return nil
}

// plAggregate keeps each category's count and revenue and sends the
// running totals to the sink.
func plAggregate(in Record, st State, out Emitter) error {
	var t tx
	if err := t.decode(in.Payload); err != nil {
		return opErr("pl", "aggregate", err)
	}
	key := mix(t.cat)
	if key != in.Key {
		return opErr("pl", "aggregate", errKey)
	}
	var n, rev uint64
	old, ok := st.Get(key)
	if ok {
		r := reader{b: old}
		n, rev = r.uvarint(), r.uvarint()
		if r.done("category state") != nil {
			return opErr("pl", "aggregate", errors.New("corrupt state"))
		}
	}
	n, rev = n+1, rev+t.cents
	st.Put(key, putUvarint(putUvarint(stateBuf(old, 20), n), rev))
	sc := getScratch()
	defer putScratch(sc)
	sc.b = putU64(putU64(putU64(sc.b, t.cat), n), rev)
	out.Emit(5, key, sc.b)
	return nil
}

// plSink formats the category totals as a report line.
func plSink(in Record, _ State, _ Emitter) error {
	r := reader{b: in.Payload}
	cat, n, rev := r.u64(), r.u64(), r.u64()
	if err := r.done("totals"); err != nil {
		return opErr("pl", "sink", err)
	}
	sc := getScratch()
	b := append(sc.b, "category="...)
	b = strconv.AppendUint(b, cat, 10)
	b = append(b, " count="...)
	b = strconv.AppendUint(b, n, 10)
	b = append(b, " revenue="...)
	sc.b = appendFixed(b, float64(rev)/100, 2)
	putScratch(sc)
	return nil
}

// --- NWM ---

// NWM is network monitoring (clasp.NWM): parse (sshd log line) → split →
// {success-filter → success-map → success-count, failure-filter →
// failure-map → failure-count} (counts keyed by host) → join-by-host
// (failures before a success, keyed by host) → report.
func NWM() App {
	return App{
		Name: "nwm",
		Operators: []Spec{
			spec("parse", false, nwmParse), spec("split", false, nwmSplit),
			spec("success-filter", false, nwmFilter("success-filter", true, 3)),
			spec("success-map", false, nwmMap("success-map", 4)),
			spec("success-count", true, nwmCount("success-count", 1)),
			spec("failure-filter", false, nwmFilter("failure-filter", false, 6)),
			spec("failure-map", false, nwmMap("failure-map", 7)),
			spec("failure-count", true, nwmCount("failure-count", 0)),
			spec("join-by-host", true, nwmJoin), spec("report", false, nwmReport),
		},
		Edges: [][2]int{
			{0, 1}, {1, 2}, {1, 5},
			{2, 3}, {3, 4}, {4, 8},
			{5, 6}, {6, 7}, {7, 8},
			{8, 9},
		},
		NewSource: newNWMSource,
	}
}

// login is a parsed login event: time (s), host, user, success (1).
type login struct {
	t, host, user uint64
	ok            byte
}

func (l *login) append(b []byte) []byte {
	return append(putU64(putU64(putU64(b, l.t), l.host), l.user), l.ok)
}

func (l *login) decode(b []byte) error {
	r := reader{b: b}
	l.t, l.host, l.user, l.ok = r.u64(), r.u64(), r.u64(), r.byte1()
	return r.done("login")
}

// nwmParse parses "<time> host<k> sshd[<pid>]: Accepted|Failed password
// for user<u> from <ip>".
func nwmParse(in Record, _ State, out Emitter) error {
	var f [9][]byte
	bad := func(what string) error { return opErr("nwm", "parse", errors.New(what)) }
	if !fields(in.Payload, f[:]) {
		return bad("want 9 space-separated fields")
	}
	ts := f[0]
	if len(ts) != 20 || ts[10] != 'T' || ts[19] != 'Z' {
		return bad("bad time")
	}
	var d [19]byte
	copy(d[:], ts[:19])
	d[10] = ' '
	t, ok := parseDateTime(d[:])
	if !ok {
		return bad("bad time")
	}
	host, ok1 := numAfter(f[1], "host")
	user, ok2 := numAfter(f[6], "user")
	if !ok1 || !ok2 || !bytes.HasPrefix(f[2], []byte("sshd[")) || string(f[4]) != "password" || string(f[5]) != "for" || string(f[7]) != "from" {
		return bad("not an sshd login line")
	}
	l := login{t: uint64(t), host: host, user: user}
	switch string(f[3]) {
	case "Accepted":
		l.ok = 1
	case "Failed":
	default:
		return bad("neither Accepted nor Failed")
	}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = l.append(sc.b)
	out.Emit(1, mix(host), sc.b)
	return nil
}

func numAfter(b []byte, prefix string) (uint64, bool) {
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[len(prefix):]), 10, 64)
	return n, err == nil
}

func nwmSplit(in Record, _ State, out Emitter) error {
	var l login
	if err := l.decode(in.Payload); err != nil {
		return opErr("nwm", "split", err)
	}
	out.Emit(2, in.Key, in.Payload)
	out.Emit(5, in.Key, in.Payload)
	return nil
}

func nwmFilter(name string, success bool, to int) opFunc {
	return func(in Record, _ State, out Emitter) error {
		var l login
		if err := l.decode(in.Payload); err != nil {
			return opErr("nwm", name, err)
		}
		if (l.ok == 1) == success {
			out.Emit(to, in.Key, in.Payload)
		}
		return nil
	}
}

// nwmMap projects the event on (host, time), keyed by host.
func nwmMap(name string, to int) opFunc {
	return func(in Record, _ State, out Emitter) error {
		var l login
		if err := l.decode(in.Payload); err != nil {
			return opErr("nwm", name, err)
		}
		sc := getScratch()
		defer putScratch(sc)
		sc.b = putU64(putU64(sc.b, l.host), l.t)
		out.Emit(to, mix(l.host), sc.b)
		return nil
	}
}

// nwmCount counts the host's events of one kind (uvarint) and sends
// (host, kind, count) to join-by-host.
func nwmCount(name string, kind byte) opFunc {
	return func(in Record, st State, out Emitter) error {
		r := reader{b: in.Payload}
		host, t := r.u64(), r.u64()
		if err := r.done("host event"); err != nil {
			return opErr("nwm", name, err)
		}
		key := mix(host)
		if key != in.Key {
			return opErr("nwm", name, errKey)
		}
		n, err := readCount(st, key)
		if err != nil {
			return opErr("nwm", name, err)
		}
		old, _ := st.Get(key)
		st.Put(key, putUvarint(stateBuf(old, 10), n+1))
		sc := getScratch()
		defer putScratch(sc)
		sc.b = putU64(putU64(append(putU64(sc.b, host), kind), n+1), t)
		out.Emit(8, key, sc.b)
		return nil
	}
}

// nwmJoin keeps the failures since the host's last success (uvarint); a
// success reports that number and resets it, a failure reports the
// streak so far.
func nwmJoin(in Record, st State, out Emitter) error {
	r := reader{b: in.Payload}
	host, kind, _, t := r.u64(), r.byte1(), r.u64(), r.u64()
	if err := r.done("host count"); err != nil || kind > 1 {
		return opErr("nwm", "join-by-host", errors.New("bad host count"))
	}
	key := mix(host)
	if key != in.Key {
		return opErr("nwm", "join-by-host", errKey)
	}
	pending, err := readCount(st, key)
	if err != nil {
		return opErr("nwm", "join-by-host", err)
	}
	old, _ := st.Get(key)
	report := pending
	if kind == 1 {
		pending = 0
	} else {
		pending++
		report = pending
	}
	st.Put(key, putUvarint(stateBuf(old, 10), pending))
	sc := getScratch()
	defer putScratch(sc)
	sc.b = putU64(putU64(append(putU64(sc.b, host), kind), report), t)
	out.Emit(9, key, sc.b)
	return nil
}

// nwmReport formats the report line.
func nwmReport(in Record, _ State, _ Emitter) error {
	r := reader{b: in.Payload}
	host, kind, n, t := r.u64(), r.byte1(), r.u64(), r.u64()
	if err := r.done("report"); err != nil {
		return opErr("nwm", "report", err)
	}
	sc := getScratch()
	b := appendDateTime(sc.b, int64(t%(1<<40)))
	b = append(b, " host"...)
	b = strconv.AppendUint(b, host, 10)
	if kind == 1 {
		b = append(b, " login after failures="...)
	} else {
		b = append(b, " failed logins in a row="...)
	}
	sc.b = strconv.AppendUint(b, n, 10)
	putScratch(sc)
	return nil
}

// --- SYN ---

// DefaultSYNWork is SYN's work per operator execution (the CLASP paper's
// measured mean execution time).
const DefaultSYNWork = 400 * time.Microsecond

// synItersPerMicrosecond converts SYN's work to iterations of synWork's
// loop. It is a constant, determined by BenchmarkSynWork's thread CPU time
// on the build machine (2-core AMD "Turin-like" VM: 1.74 CPU-ns per
// iteration, the fastest of five runs on the shared machine; loaded runs
// measured up to 3.0 ns), not a start-up calibration, so the work and its
// result never depend on the load at start-up. On another machine the
// work is the same arithmetic and takes proportionally less or more time;
// costs.md records what an execution measured.
const synItersPerMicrosecond = 575

// synWork runs n rounds of real arithmetic (a 64-bit LCG feeding a
// floating-point accumulation) seeded by x and returns the folded result.
func synWork(x uint64, n int) uint64 {
	f := 1.0
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
		f = f*0.999999 + float64(x>>40)*1e-12
	}
	return x ^ math.Float64bits(f)
}

// SYN is the synthetic chain of 10 operators (clasp.SYN), each doing
// work of fixed CPU (DefaultSYNWork by default, at most a second) on the
// 16-byte payload and passing it on.
func SYN(work time.Duration) App {
	iters := int(synDuration(work).Microseconds()) * synItersPerMicrosecond
	a := App{Name: "syn", NewSource: newSYNSource}
	for i := range 10 {
		to := i + 1
		a.Operators = append(a.Operators, spec("noop"+strconv.Itoa(i), false, func(in Record, _ State, out Emitter) error {
			r := reader{b: in.Payload}
			n, sum := r.u64(), r.u64()
			if err := r.done("syn payload"); err != nil {
				return opErr("syn", "noop", err)
			}
			sum = synWork(sum, iters)
			if to == 10 {
				if sum == 0 && n == 0 { // uses the result, so the work is never dead code
					return opErr("syn", "noop", errors.New("zero input"))
				}
				return nil
			}
			sc := getScratch()
			defer putScratch(sc)
			sc.b = putU64(putU64(sc.b, n), sum)
			out.Emit(to, in.Key, sc.b)
			return nil
		}))
		if i > 0 {
			a.Edges = append(a.Edges, [2]int{i - 1, i})
		}
	}
	return a
}

func putUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

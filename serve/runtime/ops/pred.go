package ops

import (
	"errors"
	"math"
	"strconv"
)

// numericFields are the numeric TAXI fields, in tuple order.
var numericFields = [...]int{fTripTime, fDistance, fPickupLon, fPickupLat, fDropoffLon, fDropoffLat, fFare, fSurcharge, fMTATax, fTip, fTolls, fTotal}

// taxiTuple is PRED's parsed message: msgid, taxi key, pickup time (s),
// card payment (1) or not (0), the 12 numeric fields.
type taxiTuple struct {
	msg, key uint64
	pickup   int64
	card     bool
	v        [len(numericFields)]float64
}

const (
	tDist  = 1 // index in taxiTuple.v of trip_distance
	tTime  = 0
	tPLon  = 2
	tPLat  = 3
	tFare  = 6
	tTip   = 9
	tTotal = 11
)

func (t *taxiTuple) from(msg uint64, f *taxiFields) {
	t.msg, t.key, t.pickup = msg, hashBytes(f.str[fTaxiID]), f.pickup
	t.card = string(f.str[fPayment]) == "CRD"
	for i, k := range numericFields {
		t.v[i] = f.num[k]
	}
}

func (t *taxiTuple) append(b []byte) []byte {
	b = putU64(putU64(putU64(b, t.msg), t.key), uint64(t.pickup))
	c := byte(0)
	if t.card {
		c = 1
	}
	b = append(b, c)
	for _, x := range t.v {
		b = putF64(b, x)
	}
	return b
}

func (t *taxiTuple) decode(b []byte) error {
	r := reader{b: b}
	t.msg, t.key, t.pickup = r.u64(), r.u64(), int64(r.u64())
	t.card = r.byte1() == 1
	for i := range t.v {
		t.v[i] = r.f64()
	}
	return r.done("taxi tuple")
}

// result is PRED's small output tuple: msgid, taxi key, kind, two values.
type result struct {
	msg, key uint64
	kind     byte
	a, b     float64
}

const (
	kindClass = iota // a: tip class of the decision tree
	kindLR           // a: predicted fare, b: actual fare
	kindAvg          // a: block average fare, b: latest fare
	kindErr          // a: relative error, b: the source kind
)

func (r *result) append(b []byte) []byte {
	return putF64(putF64(append(putU64(putU64(b, r.msg), r.key), r.kind), r.a), r.b)
}

func (r *result) decode(b []byte) error {
	rd := reader{b: b}
	r.msg, r.key, r.kind, r.a, r.b = rd.u64(), rd.u64(), rd.byte1(), rd.f64(), rd.f64()
	if err := rd.done("result"); err != nil {
		return err
	}
	if r.kind > kindErr {
		return errors.New("ops: result: unknown kind")
	}
	return nil
}

// PRED is RIoTBench's predictive analytics on TAXI SenML messages, with the
// topology of env.PRED: SenMLParse → {DecisionTreeClassify,
// LinearRegression, BlockWindowAverage}; LinearRegression → ErrorEstimate;
// BlockWindowAverage → ErrorEstimate; {DecisionTreeClassify,
// ErrorEstimate} → MQTTPublish (the sink).
//
// LinearRegression and BlockWindowAverage keep keyed state by taxi (the
// sensor): env's profile models no state for PRED (StateMB 0), so their
// Stateful flags are the one place this app departs from it.
func PRED() App {
	const app = "pred"
	return App{
		Name: app,
		Operators: []Spec{
			spec("SenMLParse", false, predParse),
			spec("DecisionTreeClassify", false, predTree),
			spec("LinearRegression", true, predRegression),
			spec("BlockWindowAverage", true, predWindow),
			spec("ErrorEstimate", false, predError),
			spec("MQTTPublish", false, predPublish),
		},
		Edges:     [][2]int{{0, 1}, {0, 2}, {0, 3}, {2, 4}, {3, 4}, {1, 5}, {4, 5}},
		NewSource: func(seed uint64) Source { return newTaxiSource(seed, app) },
	}
}

// predParse parses the SenML message and sends the trip to the three
// analytics, keyed by taxi.
func predParse(in Record, _ State, out Emitter) error {
	var f taxiFields
	if err := parseTaxiSenML(in.Payload, &f); err != nil {
		return opErr("pred", "SenMLParse", err)
	}
	var t taxiTuple
	t.from(in.Input, &f)
	sc := getScratch()
	defer putScratch(sc)
	sc.b = t.append(sc.b)
	for _, to := range [...]int{1, 2, 3} {
		out.Emit(to, t.key, sc.b)
	}
	return nil
}

// predTree classifies a trip's tip into five classes with a fixed decision
// tree of depth 3 over payment, fare, distance, duration and pickup hour
// (0: cash, no recorded tip; 1–4: card trips from short-cheap to
// long-night).
func predTree(in Record, _ State, out Emitter) error {
	var t taxiTuple
	if err := t.decode(in.Payload); err != nil {
		return opErr("pred", "DecisionTreeClassify", err)
	}
	hour := (t.pickup % 86400) / 3600
	var class float64
	switch {
	case !t.card:
		class = 0
	case t.v[tFare] < 10:
		if t.v[tDist] < 1.5 {
			class = 1
		} else {
			class = 2
		}
	case t.v[tTime] > 1800:
		class = 3
	case hour >= 22 || hour < 5:
		class = 4
	default:
		class = 2
	}
	r := result{msg: t.msg, key: t.key, kind: kindClass, a: class}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = r.append(sc.b)
	out.Emit(5, t.key, sc.b)
	return nil
}

// regState is a taxi's online least-squares fit of fare on distance:
// n, Σx, Σy, Σx², Σxy (ordinary least squares in closed form, updated
// per sample).
const regStateLen = 5 * 8

func decodeFloats(b []byte, v []float64) bool {
	r := reader{b: b}
	for i := range v {
		v[i] = r.f64()
	}
	return r.done("state") == nil
}

// predRegression predicts the fare from the distance with the taxi's fit so
// far, then adds the trip to the fit.
func predRegression(in Record, st State, out Emitter) error {
	var t taxiTuple
	if err := t.decode(in.Payload); err != nil {
		return opErr("pred", "LinearRegression", err)
	}
	if t.key != in.Key {
		return opErr("pred", "LinearRegression", errKey)
	}
	var s [5]float64
	old, ok := st.Get(t.key)
	if ok && !decodeFloats(old, s[:]) {
		return opErr("pred", "LinearRegression", errors.New("corrupt state"))
	}
	x, y := t.v[tDist], t.v[tFare]
	n, sx, sy, sxx, sxy := s[0], s[1], s[2], s[3], s[4]
	pred := 2.5 + 2.5*x // the tariff until the fit has two distinct points
	if d := n*sxx - sx*sx; n >= 2 && math.Abs(d) > 1e-9 {
		b := (n*sxy - sx*sy) / d
		pred = (sy-b*sx)/n + b*x
	}
	s = [5]float64{n + 1, sx + x, sy + y, sxx + x*x, sxy + x*y}
	buf := stateBuf(old, regStateLen)
	for _, v := range s {
		buf = putF64(buf, v)
	}
	st.Put(t.key, buf)
	r := result{msg: t.msg, key: t.key, kind: kindLR, a: pred, b: y}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = r.append(sc.b)
	out.Emit(4, t.key, sc.b)
	return nil
}

// BlockWindow is BlockWindowAverage's block: it emits the mean fare of
// every BlockWindow trips of a taxi.
const BlockWindow = 10

// predWindow adds the trip to the taxi's block (count, Σ fare) and emits
// the block's mean fare at its BlockWindow-th trip.
func predWindow(in Record, st State, out Emitter) error {
	var t taxiTuple
	if err := t.decode(in.Payload); err != nil {
		return opErr("pred", "BlockWindowAverage", err)
	}
	if t.key != in.Key {
		return opErr("pred", "BlockWindowAverage", errKey)
	}
	var s [2]float64
	old, ok := st.Get(t.key)
	if ok && (!decodeFloats(old, s[:]) || s[0] < 0 || s[0] >= BlockWindow) {
		return opErr("pred", "BlockWindowAverage", errors.New("corrupt state"))
	}
	s[0]++
	s[1] += t.v[tFare]
	var r result
	emit := s[0] == BlockWindow
	if emit {
		r = result{msg: t.msg, key: t.key, kind: kindAvg, a: s[1] / BlockWindow, b: t.v[tFare]}
		s = [2]float64{}
	}
	buf := putF64(putF64(stateBuf(old, 16), s[0]), s[1])
	st.Put(t.key, buf)
	if emit {
		sc := getScratch()
		defer putScratch(sc)
		sc.b = r.append(sc.b)
		out.Emit(4, t.key, sc.b)
	}
	return nil
}

// predError estimates the relative error |a − b| / max(|b|, 1) of a
// prediction (LinearRegression) or of the block average as a forecast of
// the latest fare (BlockWindowAverage).
func predError(in Record, _ State, out Emitter) error {
	var r result
	if err := r.decode(in.Payload); err != nil {
		return opErr("pred", "ErrorEstimate", err)
	}
	if r.kind != kindLR && r.kind != kindAvg {
		return opErr("pred", "ErrorEstimate", errors.New("not a prediction"))
	}
	e := result{msg: r.msg, key: r.key, kind: kindErr, a: math.Abs(r.a-r.b) / max(math.Abs(r.b), 1), b: float64(r.kind)}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = e.append(sc.b)
	out.Emit(5, r.key, sc.b)
	return nil
}

// predPublish serialises the result as an MQTT PUBLISH packet on topic
// pred/<kind>/<taxi key> with a text payload.
func predPublish(in Record, _ State, _ Emitter) error {
	var r result
	if err := r.decode(in.Payload); err != nil {
		return opErr("pred", "MQTTPublish", err)
	}
	sc := getScratch()
	defer putScratch(sc)
	topic := append(sc.b, "pred/"...)
	topic = strconv.AppendUint(topic, uint64(r.kind), 10)
	topic = append(topic, '/')
	topic = strconv.AppendUint(topic, r.key, 16)
	payload := strconv.AppendUint(topic, r.msg, 10)
	payload = append(payload, ',')
	payload = strconv.AppendFloat(payload, r.a, 'g', 8, 64)
	sc.b = payload
	pkt := appendMQTTPublish(payload, topic, payload[len(topic):])
	sc.b = pkt
	return nil
}

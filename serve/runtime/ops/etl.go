package ops

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"sync"
)

// etlFields are the ten TAXI fields ETL's SenMLParse sends one record
// each (env.ETL's fan-out of 10): the trip's measurements. The identifiers,
// pickup time and payment type ride along with every record; surcharge and
// MTA tax (fixed tariffs) are not measurements and are left out.
var etlFields = [10]int{fTripTime, fDistance, fPickupLon, fPickupLat, fDropoffLon, fDropoffLat, fFare, fTip, fTolls, fTotal}

// etlRange is RangeFilter's valid range per field (NYC's bounding box,
// trips up to two hours and $500).
var etlRange = [10][2]float64{
	{1, 7200}, {0.01, 100}, {-74.3, -73.6}, {40.4, 41.0}, {-74.3, -73.6}, {40.4, 41.0},
	{2.5, 500}, {0, 200}, {0, 50}, {2.5, 800},
}

// Record flags set by the filters and interpolation.
const (
	flagRange        = 1 << iota // RangeFilter: value out of range
	flagUnregistered             // BloomFilter: taxi not registered
	flagInterpolated             // Interpolation: value replaced by the last valid one
)

// fieldRec is ETL's per-field record: msgid, taxi key, pickup time, card,
// field (index in etlFields), flags, value, taxi id.
type fieldRec struct {
	msg, key uint64
	pickup   int64
	card     byte
	field    byte
	flags    byte
	v        float64
	id       []byte
}

func (f *fieldRec) append(b []byte) []byte {
	b = putU64(putU64(putU64(b, f.msg), f.key), uint64(f.pickup))
	b = append(b, f.card, f.field, f.flags)
	return putBytes(putF64(b, f.v), f.id)
}

func (f *fieldRec) decode(b []byte) error {
	r := reader{b: b}
	f.msg, f.key, f.pickup = r.u64(), r.u64(), int64(r.u64())
	f.card, f.field, f.flags = r.byte1(), r.byte1(), r.byte1()
	f.v, f.id = r.f64(), r.bytes()
	if err := r.done("field record"); err != nil {
		return err
	}
	if int(f.field) >= len(etlFields) {
		return errors.New("ops: field record: unknown field")
	}
	return nil
}

// ETL is RIoTBench's extract-transform-load on TAXI SenML messages with the
// topology of clasp.ETL: SenMLParse (one record per field, ×10) →
// RangeFilter → BloomFilter → Interpolation → Join (collects a message's
// ten fields, ×0.1) → Annotate → {CsvToSenML → MQTTPublish, TableInsert}
// → Sink, which joins both branches. env.ETL is the same less Sink. The
// filters mark rather than drop.
func ETL() App {
	const app = "etl"
	return App{
		Name: app,
		Operators: []Spec{
			spec("SenMLParse", false, etlParse),
			spec("RangeFilter", false, etlRangeFilter),
			spec("BloomFilter", false, etlBloomFilter),
			spec("Interpolation", true, etlInterpolate),
			spec("Join", true, etlJoin),
			spec("Annotate", false, etlAnnotate),
			spec("CsvToSenML", false, etlCsvToSenML),
			spec("MQTTPublish", false, etlPublish),
			{Name: "TableInsert", New: func() Operator { return newTable(1 << 16) }},
			spec("Sink", false, etlSink),
		},
		Edges:     [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {5, 8}, {7, 9}, {8, 9}},
		NewSource: func(seed uint64) Source { return newTaxiSource(seed, app) },
	}
}

func etlParse(in Record, _ State, out Emitter) error {
	var f taxiFields
	if err := parseTaxiSenML(in.Payload, &f); err != nil {
		return opErr("etl", "SenMLParse", err)
	}
	r := fieldRec{msg: in.Input, key: hashBytes(f.str[fTaxiID]), pickup: f.pickup, id: f.str[fTaxiID]}
	if string(f.str[fPayment]) == "CRD" {
		r.card = 1
	}
	sc := getScratch()
	defer putScratch(sc)
	for i, k := range etlFields {
		r.field, r.v = byte(i), f.num[k]
		sc.b = r.append(sc.b[:0])
		out.Emit(1, mix(r.msg), sc.b)
	}
	return nil
}

// etlForward sends a filtered field record on with the key of
// Interpolation's partition.
func etlForward(r *fieldRec, out Emitter, to int) {
	sc := getScratch()
	defer putScratch(sc)
	sc.b = r.append(sc.b)
	out.Emit(to, interpKey(r), sc.b)
}

func msgKey(r *fieldRec) uint64 { return mix(r.msg) }

// interpKey is Interpolation's partition: taxi × field.
func interpKey(r *fieldRec) uint64 { return mix(r.key ^ uint64(r.field)<<56) }

func etlRangeFilter(in Record, _ State, out Emitter) error {
	var r fieldRec
	if err := r.decode(in.Payload); err != nil {
		return opErr("etl", "RangeFilter", err)
	}
	if lim := etlRange[r.field]; !(r.v >= lim[0] && r.v <= lim[1]) {
		r.flags |= flagRange
	}
	etlForward(&r, out, 2)
	return nil
}

// bloom is a Bloom filter (Bloom, "Space/time trade-offs in hash coding
// with allowable errors", CACM 1970) of m bits and k hash functions
// derived from two (Kirsch & Mitzenmacher, "Less hashing, same
// performance", 2006: g_i = h1 + i·h2).
type bloom struct {
	bits []uint64
	m, k uint64
}

func newBloom(m, k uint64) *bloom { return &bloom{bits: make([]uint64, (m+63)/64), m: m, k: k} }

func (b *bloom) hashes(x []byte) (uint64, uint64) {
	h1 := hashBytes(x)
	return h1, mix(h1) | 1
}

func (b *bloom) add(x []byte) {
	h1, h2 := b.hashes(x)
	for i := range b.k {
		p := (h1 + i*h2) % b.m
		b.bits[p/64] |= 1 << (p % 64)
	}
}

func (b *bloom) has(x []byte) bool {
	h1, h2 := b.hashes(x)
	for i := range b.k {
		p := (h1 + i*h2) % b.m
		if b.bits[p/64]&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

// registered reports whether taxi k is registered: nine taxis in ten are.
func registered(k int) bool { return k%10 != 9 }

// registry is the Bloom filter of the registered taxis' ids: 90 ids in
// 1,024 bits with 6 hashes, a false-positive rate of about
// (1 − e^{−6·90/1024})⁶ ≈ 0.5%. Built once; read-only after.
var registry = sync.OnceValue(func() *bloom {
	b := newBloom(1024, 6)
	var id [32]byte
	for k := range Taxis {
		if registered(k) {
			b.add(taxiID(id[:0], k))
		}
	}
	return b
})

func etlBloomFilter(in Record, _ State, out Emitter) error {
	var r fieldRec
	if err := r.decode(in.Payload); err != nil {
		return opErr("etl", "BloomFilter", err)
	}
	if !registry().has(r.id) {
		r.flags |= flagUnregistered
	}
	etlForward(&r, out, 3)
	return nil
}

// etlInterpolate keeps the last valid value of each taxi × field and
// replaces an out-of-range value by it (the value stays as it is, flagged,
// if the key has none yet).
func etlInterpolate(in Record, st State, out Emitter) error {
	var r fieldRec
	if err := r.decode(in.Payload); err != nil {
		return opErr("etl", "Interpolation", err)
	}
	k := interpKey(&r)
	if k != in.Key {
		return opErr("etl", "Interpolation", errKey)
	}
	old, ok := st.Get(k)
	if ok && len(old) != 8 {
		return opErr("etl", "Interpolation", errors.New("corrupt state"))
	}
	if r.flags&flagRange != 0 {
		if ok {
			r.v = math.Float64frombits(leU64(old))
			r.flags |= flagInterpolated
		}
	} else {
		st.Put(k, putF64(stateBuf(old, 8), r.v))
	}
	sc := getScratch()
	defer putScratch(sc)
	sc.b = r.append(sc.b)
	out.Emit(4, msgKey(&r), sc.b)
	return nil
}

func leU64(b []byte) uint64 { r := reader{b: b}; return r.u64() }

// joinState layout: have (u16 bitmask), flags (u16, OR of the fields'),
// card, pickup, taxi key, ten values, taxi id (length-prefixed).
const joinFixed = 2 + 2 + 1 + 8 + 8 + 10*8

// joined is Join's output: one message's ten fields.
type joined struct {
	msg, key uint64
	pickup   int64
	card     byte
	flags    uint16
	v        [10]float64
	id       []byte
}

func (j *joined) append(b []byte) []byte {
	b = putU64(putU64(putU64(b, j.msg), j.key), uint64(j.pickup))
	b = append(b, j.card, byte(j.flags), byte(j.flags>>8))
	for _, x := range j.v {
		b = putF64(b, x)
	}
	return putBytes(b, j.id)
}

func (j *joined) decode(b []byte) error {
	r := reader{b: b}
	j.msg, j.key, j.pickup = r.u64(), r.u64(), int64(r.u64())
	j.card = r.byte1()
	j.flags = uint16(r.byte1()) | uint16(r.byte1())<<8
	for i := range j.v {
		j.v[i] = r.f64()
	}
	j.id = r.bytes()
	return r.done("joined tuple")
}

// etlJoin collects the ten fields of a message (keyed by message id) and
// emits the joined tuple when the tenth arrives, deleting the key's state.
// A field that arrives twice (a replay) overwrites the first.
func etlJoin(in Record, st State, out Emitter) error {
	var r fieldRec
	if err := r.decode(in.Payload); err != nil {
		return opErr("etl", "Join", err)
	}
	k := msgKey(&r)
	if k != in.Key {
		return opErr("etl", "Join", errKey)
	}
	old, ok := st.Get(k)
	var j joined
	if ok {
		if len(old) < joinFixed {
			return opErr("etl", "Join", errors.New("corrupt state"))
		}
		j.flags = uint16(old[2]) | uint16(old[3])<<8
	}
	have := uint16(0)
	if ok {
		have = uint16(old[0]) | uint16(old[1])<<8
	}
	if len(r.id) > 127 {
		return opErr("etl", "Join", errors.New("taxi id too long"))
	}
	n := joinFixed + 1 + len(r.id)
	buf := old
	if !ok || len(old) != n {
		buf = make([]byte, n)
		if ok {
			copy(buf, old[:joinFixed])
		}
	}
	have |= 1 << r.field
	j.flags |= uint16(r.flags)
	buf[0], buf[1] = byte(have), byte(have>>8)
	buf[2], buf[3] = byte(j.flags), byte(j.flags>>8)
	buf[4] = r.card
	putU64(buf[5:5], uint64(r.pickup))
	putU64(buf[13:13], r.key)
	putF64(buf[21+8*int(r.field):21+8*int(r.field)], r.v)
	buf[joinFixed] = byte(len(r.id))
	copy(buf[joinFixed+1:], r.id)
	if have != 1<<len(etlFields)-1 {
		st.Put(k, buf)
		return nil
	}
	j.msg, j.key, j.pickup, j.card = r.msg, r.key, r.pickup, r.card
	for i := range j.v {
		j.v[i] = math.Float64frombits(leU64(buf[21+8*i : 29+8*i]))
	}
	j.id = buf[joinFixed+1:]
	sc := getScratch()
	defer putScratch(sc)
	sc.b = j.append(sc.b)
	st.Delete(k)
	out.Emit(5, k, sc.b)
	return nil
}

// borough names the NYC borough of a pickup by coarse bounding boxes.
func borough(lon, lat float64) string {
	switch {
	case lon > -74.02 && lon < -73.93 && lat > 40.70 && lat < 40.88:
		return "Manhattan"
	case lon > -74.05 && lon < -73.85 && lat > 40.57 && lat < 40.74:
		return "Brooklyn"
	case lon > -73.96 && lon < -73.70 && lat > 40.54 && lat < 40.80:
		return "Queens"
	case lon > -73.93 && lon < -73.76 && lat > 40.79 && lat < 40.92:
		return "Bronx"
	case lon > -74.26 && lon < -74.05 && lat > 40.49 && lat < 40.65:
		return "StatenIsland"
	}
	return "Other"
}

// csvColumns is the number of columns of Annotate's CSV row: msgid, taxi
// id, pickup time, payment, the ten fields, borough, fare per mile, tip
// percentage, flags.
const csvColumns = 18

// etlAnnotate annotates the joined trip (borough of pickup, fare per mile,
// tip percentage, payment) and writes it as a CSV row.
func etlAnnotate(in Record, _ State, out Emitter) error {
	var j joined
	if err := j.decode(in.Payload); err != nil {
		return opErr("etl", "Annotate", err)
	}
	if bytes.IndexByte(j.id, ',') >= 0 {
		return opErr("etl", "Annotate", errors.New("taxi id holds a comma"))
	}
	sc := getScratch()
	defer putScratch(sc)
	b := strconv.AppendUint(sc.b, j.msg, 10)
	b = append(b, ',')
	b = append(b, j.id...)
	b = append(b, ',')
	b = appendDateTime(b, j.pickup)
	if j.card == 1 {
		b = append(b, ",CRD"...)
	} else {
		b = append(b, ",CSH"...)
	}
	for _, x := range j.v {
		b = append(b, ',')
		b = strconv.AppendFloat(b, x, 'f', -1, 64)
	}
	b = append(b, ',')
	b = append(b, borough(j.v[2], j.v[3])...)
	b = append(b, ',')
	b = appendFixed(b, j.v[6]/max(j.v[1], 0.1), 3)
	b = append(b, ',')
	b = appendFixed(b, 100*j.v[7]/max(j.v[6], 1), 2)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(j.flags), 10)
	sc.b = b
	k := mix(j.msg)
	out.Emit(6, k, b)
	out.Emit(8, k, b)
	return nil
}

// splitCSV splits a row into exactly n columns (aliasing row).
func splitCSV(row []byte, cols [][]byte) bool {
	for i := range cols {
		j := bytes.IndexByte(row, ',')
		if i == len(cols)-1 {
			if j >= 0 {
				return false
			}
			cols[i] = row
			return true
		}
		if j < 0 {
			return false
		}
		cols[i], row = row[:j], row[j+1:]
	}
	return true
}

var csvNames = [csvColumns]string{
	"msgid", "taxi_identifier", "pickup_datetime", "payment_type",
	"trip_time_in_secs", "trip_distance", "pickup_longitude", "pickup_latitude", "dropoff_longitude", "dropoff_latitude",
	"fare_amount", "tip_amount", "tolls_amount", "total_amount",
	"borough", "fare_per_mile", "tip_percentage", "flags",
}

var csvUnits = [csvColumns]string{
	"id", "string", "time", "string", "second", "meter", "lon", "lat", "lon", "lat",
	"dollar", "dollar", "dollar", "dollar", "string", "dollar", "percentage", "bitmask",
}

// csvNumeric marks the columns written as "v" (numbers checked).
func csvNumeric(i int) bool { return i >= 4 && i <= 13 || i == 15 || i == 16 }

// etlCsvToSenML converts an annotated CSV row to a SenML message: one
// entry per column (numbers checked), bt the pickup time in ms.
func etlCsvToSenML(in Record, _ State, out Emitter) error {
	var cols [csvColumns][]byte
	if !splitCSV(in.Payload, cols[:]) {
		return opErr("etl", "CsvToSenML", errors.New("row does not have 18 columns"))
	}
	msg, err := strconv.ParseUint(string(cols[0]), 10, 64)
	if err != nil {
		return opErr("etl", "CsvToSenML", errors.New("bad msgid"))
	}
	pickup, ok := parseDateTime(cols[2])
	if !ok {
		return opErr("etl", "CsvToSenML", errors.New("bad pickup_datetime"))
	}
	sc := getScratch()
	defer putScratch(sc)
	b := append(sc.b, `{"e":[`...)
	for i := range csvColumns {
		c := cols[i]
		for _, ch := range c {
			if ch == '"' || ch == '\\' || ch < 0x20 {
				return opErr("etl", "CsvToSenML", errors.New("column needs escaping"))
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		if csvNumeric(i) {
			if _, err := strconv.ParseFloat(string(c), 64); err != nil {
				return opErr("etl", "CsvToSenML", errors.New("bad number in column "+csvNames[i]))
			}
			b = append(b, `{"v":"`...)
			b = append(b, c...)
			b = append(b, `","u":"`...)
		} else {
			b = append(b, `{"u":"`...)
		}
		b = append(b, csvUnits[i]...)
		b = append(b, `","n":"`...)
		b = append(b, csvNames[i]...)
		if csvNumeric(i) {
			b = append(b, `"}`...)
		} else {
			b = append(b, `","sv":"`...)
			b = append(b, c...)
			b = append(b, `"}`...)
		}
	}
	b = append(b, `],"bt":`...)
	b = strconv.AppendInt(b, pickup*1000, 10)
	b = append(b, '}')
	sc.b = b
	out.Emit(7, mix(msg), b)
	return nil
}

// ack is what the two branches tell Sink: msgid, branch (1 publish, 2
// table), a length and a checksum of what was written.
func appendAck(b []byte, msg uint64, branch byte, n int, sum uint64) []byte {
	return putU64(putU64(append(putU64(b, msg), branch), uint64(n)), sum)
}

// etlPublish checks the SenML message is JSON and wraps it in an MQTT
// PUBLISH packet on topic etl/senml; its acknowledgement names the message
// by Record.Input (ETL's message id).
func etlPublish(in Record, _ State, out Emitter) error {
	s := jscan{b: in.Payload}
	if !s.skip(0) {
		return opErr("etl", "MQTTPublish", errors.New("payload is not JSON"))
	}
	if s.ws(); s.i != len(s.b) {
		return opErr("etl", "MQTTPublish", errors.New("trailing data after JSON"))
	}
	if len(in.Payload) > 1<<20 {
		return opErr("etl", "MQTTPublish", errors.New("message over 1 MiB"))
	}
	sc := getScratch()
	defer putScratch(sc)
	pkt := appendMQTTPublish(sc.b, []byte("etl/senml"), in.Payload)
	n := len(pkt)
	sc.b = appendAck(pkt, in.Input, 1, n, hashBytes(pkt))
	out.Emit(9, mix(in.Input), sc.b[n:])
	return nil
}

// table is TableInsert's in-memory table: a ring of rows with an index by
// message id. It stands for the external store (RIoTBench writes to Azure
// Table storage), so it is not keyed state and does not move with key
// groups. Safe for concurrent use (one lock).
type table struct {
	mu    sync.Mutex
	rows  []tableRow
	next  int
	index map[uint64]int32 // msgid → row
}

type tableRow struct {
	msg, key uint64
	pickup   int64
	v        [10]float64
	borough  [16]byte
}

func newTable(capacity int) *table {
	return &table{rows: make([]tableRow, capacity), index: make(map[uint64]int32, capacity)}
}

// Process parses the CSV row and inserts it, evicting the oldest row when
// the ring is full.
func (t *table) Process(in Record, _ State, out Emitter) error {
	var cols [csvColumns][]byte
	if !splitCSV(in.Payload, cols[:]) {
		return opErr("etl", "TableInsert", errors.New("row does not have 18 columns"))
	}
	var row tableRow
	var err error
	if row.msg, err = strconv.ParseUint(string(cols[0]), 10, 64); err != nil {
		return opErr("etl", "TableInsert", errors.New("bad msgid"))
	}
	row.key = hashBytes(cols[1])
	p, ok := parseDateTime(cols[2])
	if !ok {
		return opErr("etl", "TableInsert", errors.New("bad pickup_datetime"))
	}
	row.pickup = p
	for i := range row.v {
		if row.v[i], err = strconv.ParseFloat(string(cols[4+i]), 64); err != nil {
			return opErr("etl", "TableInsert", errors.New("bad number in column "+csvNames[4+i]))
		}
	}
	copy(row.borough[:], cols[14])
	t.mu.Lock()
	slot := t.next
	if old := &t.rows[slot]; old.msg != 0 || old.key != 0 {
		if t.index[old.msg] == int32(slot) {
			delete(t.index, old.msg)
		}
	}
	t.rows[slot] = row
	t.index[row.msg] = int32(slot)
	t.next = (slot + 1) % len(t.rows)
	t.mu.Unlock()
	sc := getScratch()
	defer putScratch(sc)
	sc.b = appendAck(sc.b, row.msg, 2, len(in.Payload), hashBytes(in.Payload))
	out.Emit(9, mix(row.msg), sc.b)
	return nil
}

// lookup returns the row of a message id (for tests).
func (t *table) lookup(msg uint64) (tableRow, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.index[msg]
	if !ok {
		return tableRow{}, false
	}
	return t.rows[i], true
}

// etlSink checks an acknowledgement from either branch.
func etlSink(in Record, _ State, _ Emitter) error {
	r := reader{b: in.Payload}
	_, branch, n, _ := r.u64(), r.byte1(), r.u64(), r.u64()
	if err := r.done("ack"); err != nil {
		return opErr("etl", "Sink", err)
	}
	if branch != 1 && branch != 2 || n == 0 {
		return opErr("etl", "Sink", errors.New("bad ack"))
	}
	return nil
}

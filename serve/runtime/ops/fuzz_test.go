package ops

import (
	"bytes"
	"math"
	"testing"
)

func FuzzSenMLParse(f *testing.F) {
	src := newTaxiSource(1, "etl")
	for range 5 {
		_, p := src.Next(nil)
		f.Add(p)
	}
	f.Add([]byte(`{"e":[{"v":1.5,"u":"x","n":"trip_distance","t":[1,{"a":null}]}],"bt":1}`))
	f.Add([]byte(`{"e":[],"bt":-0,"x":"\u00e9\n"}`))
	f.Add([]byte(`{"e":[{"n":"taxi_identifier","sv":"A"},{"n":"taxi_identifier","sv":"B"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tf taxiFields
		if err := parseTaxiSenML(b, &tf); err != nil {
			return
		}
		for k := range nTaxiFields {
			if taxiString(k) && tf.str[k] == nil {
				t.Fatalf("field %s accepted without a value", taxiNames[k])
			}
			if x := tf.num[k]; math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("field %s: %v", taxiNames[k], x)
			}
		}
		// Whatever parses runs through both apps' parse operators.
		for _, a := range []App{PRED(), ETL()} {
			var c collector
			if err := a.Operators[0].New().Process(Record{Payload: b}, memState{}, &c); err != nil {
				t.Fatalf("%s: parsed but the operator failed: %v", a.Name, err)
			}
		}
	})
}

func FuzzAADeserialize(f *testing.F) {
	src := newAASource(1)
	for range 5 {
		_, p := src.Next(nil)
		f.Add(p)
	}
	f.Add([]byte(`{"user_id":"a","page_id":"b","ad_id":"c","ad_type":"mail","event_type":"view","event_time":"1","ip_address":"x","extra":[1,2,{"k":true}]}`))
	f.Add([]byte(`{"user_id":"a","user_id":"a"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e adEvent
		if err := parseAdEvent(b, &e); err != nil {
			return
		}
		var d adEvent
		if err := d.decode(e.append(nil)); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if d.event != e.event || d.time != e.time || !bytes.Equal(d.ad, e.ad) || !bytes.Equal(d.ip, e.ip) {
			t.Fatalf("round trip changed the event")
		}
	})
}

// FuzzOperators feeds arbitrary payloads to every operator of every app,
// over the state a short run left: no panic, and an error changes no state
// and emits nothing.
func FuzzOperators(f *testing.F) {
	var runs []*run
	for _, n := range AppNames() {
		a, _ := AppByName(n)
		if n == "syn" {
			a = SYN(0)
		}
		r := newRun(a)
		r.keep = 3
		r.feed(f, 1, 3)
		runs = append(runs, r)
		for i := range a.Operators {
			for _, in := range r.inputs[i] {
				f.Add(uint8(len(runs)-1), uint8(i), in.Key, in.Payload)
			}
		}
	}
	f.Fuzz(func(t *testing.T, app, op uint8, key uint64, b []byte) {
		r := runs[int(app)%len(runs)]
		i := int(op) % len(r.ops)
		st := r.states[i].clone()
		before := st.clone()
		var c collector
		err := r.app.Operators[i].New().Process(Record{Key: key, Input: 1, Payload: b}, st, &c)
		if err != nil && (!st.equal(before) || len(c.out) > 0) {
			t.Fatalf("%s/%s: a failing record changed state or emitted (%v)", r.app.Name, r.app.Operators[i].Name, err)
		}
	})
}

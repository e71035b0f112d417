package ops

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unsafe"
)

// SenML (RFC 8428 and its draft predecessor, which RIoTBench uses): a
// message is {"e":[{"n":NAME,"u":UNIT,"v":VALUE|"sv":STRING},…],"bt":BASE}.
// RIoTBench's TAXI messages carry the 16 fields of a taxi trip; numbers
// arrive as JSON strings ("v":"9.08") and coordinates as "sv". The parser
// accepts numbers as JSON numbers or strings, skips members it does not
// know, does not decode string escapes (a field name with escapes is not a
// known name) and rejects anything that is not JSON.

// The taxi trip fields, in the order of RIoTBench's TAXI schema
// (taxi-schema-without-annotation.csv, less its "timestamp" column, which
// the SenML messages carry as "bt").
const (
	fTaxiID = iota
	fLicense
	fPickup
	fTripTime
	fDistance
	fPickupLon
	fPickupLat
	fDropoffLon
	fDropoffLat
	fPayment
	fFare
	fSurcharge
	fMTATax
	fTip
	fTolls
	fTotal
	nTaxiFields
)

var taxiNames = [nTaxiFields]string{
	"taxi_identifier", "hack_license", "pickup_datetime", "trip_time_in_secs", "trip_distance",
	"pickup_longitude", "pickup_latitude", "dropoff_longitude", "dropoff_latitude", "payment_type",
	"fare_amount", "surcharge", "mta_tax", "tip_amount", "tolls_amount", "total_amount",
}

var taxiUnits = [nTaxiFields]string{
	"string", "string", "time", "second", "meter", "lon", "lat", "lon", "lat", "string",
	"dollar", "percentage", "percentage", "dollar", "dollar", "dollar",
}

// taxiString marks the fields that are strings rather than numbers.
func taxiString(f int) bool { return f == fTaxiID || f == fLicense || f == fPickup || f == fPayment }

// taxiSV marks the fields RIoTBench sends as "sv" (coordinates included).
func taxiSV(f int) bool { return taxiString(f) || (f >= fPickupLon && f <= fDropoffLat) }

// taxiFields is one parsed TAXI message. String fields alias the payload.
type taxiFields struct {
	str    [nTaxiFields][]byte
	num    [nTaxiFields]float64
	bt     int64 // base time, ms since the epoch
	pickup int64 // pickup_datetime, s since the epoch (UTC)
}

var errSenML = errors.New("ops: senml")

// parseTaxiSenML parses a TAXI SenML message into f. Every one of the 16
// fields must be present exactly once.
func parseTaxiSenML(b []byte, f *taxiFields) error {
	s := jscan{b: b}
	var have uint32
	haveBT := false
	s.ws()
	if !s.eat('{') {
		return s.fail("want an object")
	}
	for first := true; ; first = false {
		s.ws()
		if s.eat('}') {
			break
		}
		if !first && !s.eat(',') {
			return s.fail("want , or }")
		}
		s.ws()
		key, ok := s.str()
		if !ok || !s.colon() {
			return s.fail("want a member name")
		}
		switch string(key) {
		case "e":
			if !s.eat('[') {
				return s.fail(`"e" is not an array`)
			}
			for i := 0; ; i++ {
				s.ws()
				if s.eat(']') {
					break
				}
				if i > 0 && !s.eat(',') {
					return s.fail("want , or ] in e")
				}
				k, val, err := s.entry()
				if err != nil {
					return err
				}
				if k < 0 {
					continue
				}
				if have&(1<<k) != 0 {
					return fmt.Errorf("%w: field %s given twice", errSenML, taxiNames[k])
				}
				have |= 1 << k
				if taxiString(k) {
					f.str[k] = val
					continue
				}
				x, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(val), len(val)), 64)
				if err != nil || x != x || x > 1e300 || x < -1e300 {
					return fmt.Errorf("%w: field %s: bad number %q", errSenML, taxiNames[k], val)
				}
				f.num[k] = x
			}
		case "bt":
			v, ok := s.number()
			if !ok {
				return s.fail(`"bt" is not a number`)
			}
			bt, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(v), len(v)), 10, 64)
			if err != nil {
				return fmt.Errorf("%w: bad bt %q", errSenML, v)
			}
			f.bt, haveBT = bt, true
		default:
			if !s.skip(0) {
				return s.fail("bad value")
			}
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return s.fail("trailing data")
	}
	if !haveBT {
		return fmt.Errorf("%w: no bt", errSenML)
	}
	for k := range nTaxiFields {
		if have&(1<<k) == 0 {
			return fmt.Errorf("%w: field %s missing", errSenML, taxiNames[k])
		}
	}
	t, ok := parseDateTime(f.str[fPickup])
	if !ok {
		return fmt.Errorf("%w: bad pickup_datetime %q", errSenML, f.str[fPickup])
	}
	f.pickup = t
	return nil
}

// entry parses one {"n":…,"u":…,"v"|"sv":…} object and returns the taxi
// field index (-1: not a taxi field) and its raw value.
func (s *jscan) entry() (int, []byte, error) {
	s.ws()
	if !s.eat('{') {
		return 0, nil, s.fail("entry is not an object")
	}
	var name, val []byte
	haveVal := false
	for first := true; ; first = false {
		s.ws()
		if s.eat('}') {
			break
		}
		if !first && !s.eat(',') {
			return 0, nil, s.fail("want , or } in entry")
		}
		s.ws()
		key, ok := s.str()
		if !ok || !s.colon() {
			return 0, nil, s.fail("want a member name in entry")
		}
		s.ws()
		switch string(key) {
		case "n":
			if name, ok = s.str(); !ok {
				return 0, nil, s.fail(`"n" is not a string`)
			}
		case "v", "sv":
			if s.i < len(s.b) && s.b[s.i] == '"' {
				val, ok = s.str()
			} else {
				val, ok = s.number()
			}
			if !ok {
				return 0, nil, s.fail("bad value")
			}
			haveVal = true
		default:
			if !s.skip(0) {
				return 0, nil, s.fail("bad value in entry")
			}
		}
	}
	k := taxiField(name)
	if k >= 0 && !haveVal {
		return 0, nil, fmt.Errorf("%w: field %s has no value", errSenML, taxiNames[k])
	}
	return k, val, nil
}

func taxiField(name []byte) int {
	for k, n := range taxiNames {
		if string(name) == n {
			return k
		}
	}
	return -1
}

// parseDateTime parses "YYYY-MM-DD hh:mm:ss" (UTC) to seconds since the
// epoch.
func parseDateTime(b []byte) (int64, bool) {
	if len(b) != 19 || b[4] != '-' || b[7] != '-' || b[10] != ' ' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	num := func(s []byte) (int64, bool) {
		var v int64
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int64(c-'0')
		}
		return v, true
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	se, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 {
		return 0, false
	}
	return daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + se, true
}

// daysFromCivil is the day number since 1970-01-01 of a proleptic
// Gregorian date (Howard Hinnant, "chrono-Compatible Low-Level Date
// Algorithms", 2013).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// jscan is a minimal JSON scanner over a byte slice: no allocation, no
// unescaping, bounded nesting.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) fail(what string) error {
	return fmt.Errorf("%w: byte %d: %s", errSenML, s.i, what)
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *jscan) colon() bool { s.ws(); ok := s.eat(':'); s.ws(); return ok }

// str reads a string and returns its raw contents (escapes not decoded,
// but checked).
func (s *jscan) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return nil, false
					}
				}
				s.i += 6
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		default:
			s.i++
		}
	}
	return nil, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// number reads a JSON number's text.
func (s *jscan) number() ([]byte, bool) {
	start := s.i
	s.eat('-')
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if digits() == 0 {
		return nil, false
	}
	if s.eat('.') && digits() == 0 {
		return nil, false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

const maxDepth = 32

// skip skips one value of any kind.
func (s *jscan) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		for first := true; ; first = false {
			s.ws()
			if s.eat(end) {
				return true
			}
			if !first && !s.eat(',') {
				return false
			}
			if c == '{' {
				s.ws()
				if _, ok := s.str(); !ok || !s.colon() {
					return false
				}
			}
			if !s.skip(depth + 1) {
				return false
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		_, ok := s.number()
		return ok
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return true
			}
		}
		return false
	}
}

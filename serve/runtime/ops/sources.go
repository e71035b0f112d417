package ops

import (
	"math/rand/v2"
	"strconv"
	"sync"

	"streamscale/rng"
)

// The input generators. Each draws from the named stream rng.OpsSource +
// app name of the seed it is given, so the same seed gives the same
// payload sequence. A Source is not safe for concurrent use (the planner's
// load generator owns it).

func newRand(seed uint64, app string) *rand.Rand { return rng.New(seed, rng.OpsSource+app) }

const hexDigits = "0123456789ABCDEF"

// appendHex64 appends x as 16 upper-case hex digits.
func appendHex64(b []byte, x uint64) []byte {
	for i := 60; i >= 0; i -= 4 {
		b = append(b, hexDigits[(x>>uint(i))&15])
	}
	return b
}

// appendUUID appends a UUID-shaped string (8-4-4-4-12 lower-case hex) of hi, lo.
func appendUUID(b []byte, hi, lo uint64) []byte {
	var h [32]byte
	appendHex64(h[:0], hi)
	appendHex64(h[16:16], lo)
	for i, c := range h {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b = append(b, '-')
		}
		if c >= 'A' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

func appendFixed(b []byte, x float64, prec int) []byte {
	return strconv.AppendFloat(b, x, 'f', prec, 64)
}

// --- TAXI SenML (pred, etl) ---

// Taxis is the number of distinct taxis (the sensors of PRED and ETL; the
// keys of ETL's Interpolation are taxi × field, 1,000 as in clasp.ETL).
const Taxis = 100

// taxiID appends the 32-hex-digit identifier of taxi k (fixed, not drawn:
// ETL's Bloom filter knows the registered taxis).
func taxiID(b []byte, k int) []byte {
	return appendHex64(appendHex64(b, mix(uint64(k))), mix(uint64(k)^0x5bd1e995))
}

// taxiBaseMS is the first bt of the RIoTBench TAXI sample (2013-01-13 23:10 UTC).
const taxiBaseMS = 1358101800000

// taxiSource generates messages shaped like RIoTBench's
// TAXI_sample_data_senml.csv: the same 16 entries in the same order with
// the same units and value kinds, values in the sample's ranges (NYC
// coordinates, fares of $2.50 + $2.50 per mile, tips on card payments
// only), about 870 bytes each. 2% of messages carry the zero dropoff
// coordinates that real TLC records contain, which ETL's RangeFilter
// flags.
type taxiSource struct {
	r  *rand.Rand
	n  int64
	id [32]byte
}

func newTaxiSource(seed uint64, app string) Source { return &taxiSource{r: newRand(seed, app)} }

func (s *taxiSource) Next(buf []byte) (uint64, []byte) {
	r := s.r
	k := r.IntN(Taxis)
	id := taxiID(s.id[:0], k)
	bt := taxiBaseMS + s.n*20 // 50 messages per second of trace time
	s.n++
	trip := 60 + r.IntN(3000)
	speed := 6 + 14*r.Float64() // mph
	dist := float64(trip) / 3600 * speed
	plon, plat := -74.02+0.09*r.Float64(), 40.70+0.10*r.Float64()
	dlon, dlat := plon+(r.Float64()-0.5)*dist/40, plat+(r.Float64()-0.5)*dist/50
	if r.IntN(50) == 0 {
		dlon, dlat = 0, 0
	}
	card := r.IntN(2) == 0
	fare := float64(int((2.5+2.5*dist+0.25*float64(trip)/60)*2+0.5)) / 2
	sur := float64(r.IntN(3)) * 0.5
	mta := 0.5
	tip := 0.0
	if card {
		tip = float64(int(fare*(0.15+0.1*r.Float64())*100)) / 100
	}
	tolls := 0.0
	if r.IntN(20) == 0 {
		tolls = 5.33
	}
	total := fare + sur + mta + tip + tolls
	pickup := bt/1000 - int64(trip) - int64(r.IntN(600))

	b := append(buf[:0], `{"e":[`...)
	for f := range nTaxiFields {
		if f > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if !taxiSV(f) {
			b = append(b, `"v":"`...)
			b = s.value(b, f, trip, dist, fare, sur, mta, tip, tolls, total)
			b = append(b, `",`...)
		}
		b = append(b, `"u":"`...)
		b = append(b, taxiUnits[f]...)
		b = append(b, `","n":"`...)
		b = append(b, taxiNames[f]...)
		b = append(b, '"')
		if taxiSV(f) {
			b = append(b, `,"sv":"`...)
			switch f {
			case fTaxiID:
				b = append(b, id...)
			case fLicense:
				b = appendHex64(appendHex64(b, r.Uint64()), r.Uint64())
			case fPickup:
				b = appendDateTime(b, pickup)
			case fPayment:
				if card {
					b = append(b, "CRD"...)
				} else {
					b = append(b, "CSH"...)
				}
			case fPickupLon:
				b = appendFixed(b, plon, 6)
			case fPickupLat:
				b = appendFixed(b, plat, 6)
			case fDropoffLon:
				b = appendFixed(b, dlon, 6)
			case fDropoffLat:
				b = appendFixed(b, dlat, 6)
			}
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, `],"bt":`...)
	b = strconv.AppendInt(b, bt, 10)
	b = append(b, '}')
	return hashBytes(id), b
}

func (s *taxiSource) value(b []byte, f, trip int, dist, fare, sur, mta, tip, tolls, total float64) []byte {
	switch f {
	case fTripTime:
		return strconv.AppendInt(b, int64(trip), 10)
	case fDistance:
		return appendFixed(b, dist, 2)
	case fFare:
		return appendFixed(b, fare, 2)
	case fSurcharge:
		return appendFixed(b, sur, 2)
	case fMTATax:
		return appendFixed(b, mta, 2)
	case fTip:
		return appendFixed(b, tip, 2)
	case fTolls:
		return appendFixed(b, tolls, 2)
	case fTotal:
		return appendFixed(b, total, 2)
	}
	return b
}

// appendDateTime appends "YYYY-MM-DD hh:mm:ss" (UTC) of t seconds since the epoch.
func appendDateTime(b []byte, t int64) []byte {
	days, sec := t/86400, t%86400
	if sec < 0 {
		days, sec = days-1, sec+86400
	}
	y, m, d := civilFromDays(days)
	two := func(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
	b = strconv.AppendInt(b, y, 10)
	b = append(b, '-')
	b = two(b, m)
	b = append(b, '-')
	b = two(b, d)
	b = append(b, ' ')
	b = two(b, sec/3600)
	b = append(b, ':')
	b = two(b, sec/60%60)
	b = append(b, ':')
	return two(b, sec%60)
}

// civilFromDays inverts daysFromCivil (Hinnant 2013).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// --- WC sentences ---

// Words is the vocabulary size of WC's generated text (clasp.WC's keys).
const Words = 50000

var syllables = [...]string{
	"ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "po", "da",
	"fe", "gu", "ha", "ji", "ko", "la", "mu", "no", "pi", "qu",
	"re", "si", "to", "ul", "va", "we", "xi", "yo", "ze", "an",
	"be", "ci",
}

// vocabulary is the fixed word list: word i spells i in base 32 with a
// syllable per digit (at least two), so words are distinct by
// construction.
var vocabulary = sync.OnceValue(func() [][]byte {
	v := make([][]byte, Words)
	for i := range v {
		var w []byte
		x := i
		for d := 0; d < 2 || x > 0; d++ {
			w = append(w, syllables[x%32]...)
			x /= 32
		}
		v[i] = w
	}
	return v
})

// wcSource generates sentences of 10 to 14 words (mean 12) drawn from the
// vocabulary with a Zipf law of exponent 1.1 (word frequencies in text
// follow Zipf's law with exponent near 1).
type wcSource struct {
	r    *rand.Rand
	zipf *rand.Zipf
	n    uint64
}

func newWCSource(seed uint64) Source {
	r := newRand(seed, "wc")
	return &wcSource{r: r, zipf: rand.NewZipf(r, 1.1, 1, Words-1)}
}

func (s *wcSource) Next(buf []byte) (uint64, []byte) {
	v := vocabulary()
	n := 10 + s.r.IntN(5)
	b := buf[:0]
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, v[s.zipf.Uint64()]...)
	}
	s.n++
	return mix(s.n % 1000), b
}

// --- SD sensor readings ---

// Sensors is the number of SD's sensors (clasp.SD's keys).
const Sensors = 1000

// sdSource generates Intel Berkeley lab readings ("date time epoch moteid
// temperature humidity light voltage"), one mote after another at random,
// each mote's temperature a random walk with 1% spikes of +50%.
type sdSource struct {
	r     *rand.Rand
	temp  [Sensors]float64
	epoch int64
}

func newSDSource(seed uint64) Source {
	s := &sdSource{r: newRand(seed, "sd")}
	for i := range s.temp {
		s.temp[i] = 18 + 6*s.r.Float64()
	}
	return s
}

func (s *sdSource) Next(buf []byte) (uint64, []byte) {
	r := s.r
	m := r.IntN(Sensors)
	s.temp[m] = min(max(s.temp[m]+(r.Float64()-0.5)*0.2, 10), 35)
	t := s.temp[m]
	if r.IntN(100) == 0 {
		t *= 1.5
	}
	s.epoch++
	sec := 1078358400 + s.epoch/20 // 2004-03-04, 20 readings per second
	b := appendDateTime(buf[:0], sec)
	b = append(b, '.')
	b = strconv.AppendInt(b, 100000+int64(r.IntN(900000)), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, s.epoch, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(m+1), 10)
	b = append(b, ' ')
	b = appendFixed(b, t, 4)
	b = append(b, ' ')
	b = appendFixed(b, 30+10*r.Float64(), 4)
	b = append(b, ' ')
	b = appendFixed(b, 100*r.Float64(), 2)
	b = append(b, ' ')
	b = appendFixed(b, 2.6+0.1*r.Float64(), 5)
	return mix(uint64(m + 1)), b
}

// --- AA ad events (Yahoo streaming benchmark) ---

// Ads and Campaigns size AA's join table (clasp.AA's keys): ad i belongs
// to campaign Campaign(i).
const (
	Ads       = 10000
	Campaigns = 100
)

var adTypes = [...]string{"banner", "modal", "sponsored-search", "mail", "mobile"}
var eventTypes = [...]string{"view", "click", "purchase"}

func adUUID(b []byte, ad int) []byte {
	return appendUUID(b, mix(uint64(ad)|1<<40), mix(uint64(ad)|2<<40))
}

// aaSource generates the Yahoo benchmark's JSON events: user, page and ad
// ids (UUIDs), ad type, event type (view, click, purchase uniformly),
// event time (ms) and IP address.
type aaSource struct {
	r *rand.Rand
	n int64
}

func newAASource(seed uint64) Source { return &aaSource{r: newRand(seed, "aa")} }

func (s *aaSource) Next(buf []byte) (uint64, []byte) {
	r := s.r
	ad := r.IntN(Ads)
	b := append(buf[:0], `{"user_id":"`...)
	b = appendUUID(b, r.Uint64(), r.Uint64())
	b = append(b, `","page_id":"`...)
	b = appendUUID(b, r.Uint64(), r.Uint64())
	b = append(b, `","ad_id":"`...)
	start := len(b)
	b = adUUID(b, ad)
	key := hashBytes(b[start:])
	b = append(b, `","ad_type":"`...)
	b = append(b, adTypes[r.IntN(len(adTypes))]...)
	b = append(b, `","event_type":"`...)
	b = append(b, eventTypes[r.IntN(len(eventTypes))]...)
	b = append(b, `","event_time":"`...)
	s.n++
	b = strconv.AppendInt(b, 1449686400000+s.n*2, 10)
	b = append(b, `","ip_address":"`...)
	ip := r.Uint32()
	for i := 3; i >= 0; i-- {
		b = strconv.AppendUint(b, uint64(ip>>(8*i)&255), 10)
		if i > 0 {
			b = append(b, '.')
		}
	}
	b = append(b, `"}`...)
	return key, b
}

// --- PL transactions ---

// Items and Categories size PL's join and aggregate (clasp.PL's keys).
const (
	Items      = 10000
	Categories = 100
	plUsers    = 100000
)

// plSource generates purchase transactions as CSV: "txid,user,item,amount,ts"
// with items uniform and amounts uniform in [0.01, 100.00].
type plSource struct {
	r *rand.Rand
	n int64
}

func newPLSource(seed uint64) Source { return &plSource{r: newRand(seed, "pl")} }

func (s *plSource) Next(buf []byte) (uint64, []byte) {
	r := s.r
	s.n++
	user := r.IntN(plUsers)
	b := strconv.AppendInt(buf[:0], s.n, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(user), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.IntN(Items)), 10)
	b = append(b, ',')
	b = appendFixed(b, float64(1+r.IntN(10000))/100, 2)
	b = append(b, ',')
	b = strconv.AppendInt(b, 1420070400+s.n, 10)
	return mix(uint64(user)), b
}

// --- NWM login events ---

// Hosts is the number of NWM's hosts (clasp.NWM's keys).
const Hosts = 5000

// nwmSource generates sshd-style log lines, 80% successful logins:
// "<RFC 3339 time> host<k> sshd[<pid>]: Accepted|Failed password for user<u> from <ip>".
type nwmSource struct {
	r *rand.Rand
	n int64
}

func newNWMSource(seed uint64) Source { return &nwmSource{r: newRand(seed, "nwm")} }

func (s *nwmSource) Next(buf []byte) (uint64, []byte) {
	r := s.r
	s.n++
	host := r.IntN(Hosts)
	t := 1425211200 + s.n/10
	b := appendDateTime(buf[:0], t)
	b[10] = 'T'
	b = append(b, "Z host"...)
	b = strconv.AppendInt(b, int64(host), 10)
	b = append(b, " sshd["...)
	b = strconv.AppendInt(b, int64(1000+r.IntN(30000)), 10)
	b = append(b, "]: "...)
	if r.IntN(5) == 0 {
		b = append(b, "Failed"...)
	} else {
		b = append(b, "Accepted"...)
	}
	b = append(b, " password for user"...)
	b = strconv.AppendInt(b, int64(r.IntN(500)), 10)
	b = append(b, " from 10."...)
	b = strconv.AppendInt(b, int64(r.IntN(256)), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(r.IntN(256)), 10)
	b = append(b, ".1"...)
	return mix(uint64(host)), b
}

// --- SYN ---

// synSource generates 16-byte payloads: the input number and a checksum
// the operators fold their work into.
type synSource struct {
	r *rand.Rand
	n uint64
}

func newSYNSource(seed uint64) Source { return &synSource{r: newRand(seed, "syn")} }

func (s *synSource) Next(buf []byte) (uint64, []byte) {
	s.n++
	b := putU64(buf[:0], s.n)
	b = putU64(b, s.r.Uint64())
	return mix(s.n % 1000), b
}

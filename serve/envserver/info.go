package envserver

import (
	"encoding/binary"
	"math"
	"strconv"

	"streamscale/env"
)

// The info of a step or reset: the same keys for a single env (a JSON
// object) and a vector (binary rows, one value per env). Units as
// env.Info: rates in events/s, latencies in ms, CPU in millicores.

type floatField struct {
	name string
	val  func(*env.Info) float64
}

// infoFloats are the float64 keys, in order.
var infoFloats = []floatField{
	{"offered_rate", func(i *env.Info) float64 { return i.OfferedRate }},
	{"next_offered_rate", func(i *env.Info) float64 { return i.NextOfferedRate }},
	{"throughput", func(i *env.Info) float64 { return i.Throughput }},
	{"sink_events", func(i *env.Info) float64 { return i.SinkEvents }},
	{"p95_ms", func(i *env.Info) float64 { return i.P95MS }},
	{"mean_ms", func(i *env.Info) float64 { return i.MeanMS }},
	{"total_cpu", func(i *env.Info) float64 { return i.TotalCPU }},
	{"in_flight", func(i *env.Info) float64 { return i.InFlight }},
	{"reward_slo", func(i *env.Info) float64 { return i.Reward.SLO }},
	{"reward_risk", func(i *env.Info) float64 { return i.Reward.Risk }},
	{"reward_resource", func(i *env.Info) float64 { return i.Reward.Resource }},
	{"reward_progress", func(i *env.Info) float64 { return i.Reward.Progress }},
	{"reward_churn", func(i *env.Info) float64 { return i.Reward.Churn }},
	{"reward_recovery", func(i *env.Info) float64 { return i.Reward.Recovery }},
	{"reward_reconf", func(i *env.Info) float64 { return i.Reward.Reconf }},
	{"reward_total", func(i *env.Info) float64 { return i.Reward.Total }},
}

// The integer keys: step (int64) and seed (uint64, sent as its bits).
const (
	keyStep = "step"
	keySeed = "seed"
)

// infoBools are the boolean keys, in order.
var infoBools = []struct {
	name string
	val  func(*env.Info) bool
}{
	{"completed", func(i *env.Info) bool { return i.Completed }},
	{"violated", func(i *env.Info) bool { return i.Violated }},
}

// keyApplied is the per-task key: applied millicores of each task.
const keyApplied = "applied"

// Keys a vector step adds (zero where no episode ended, and after reset).
const (
	keyEpisodeReturn = "episode_return"
	keyEpisodeLength = "episode_length"
)

// InfoLayout names the rows of a vector response's info sections (see the
// package doc): after the observation sections come, in this order, a
// float64 section of len(Float64)×N values (row r, env i at r·N+i), an
// int64 section of len(Int64)×N, a bool section of len(Bool)×N, and one
// float64 section of N×tasks values (env-major) per PerTask key. Rows
// named in Uint64 hold uint64 bit patterns in the int64 section.
type InfoLayout struct {
	Float64 []string `json:"float64"`
	Int64   []string `json:"int64"`
	Uint64  []string `json:"uint64"`
	Bool    []string `json:"bool"`
	PerTask []string `json:"per_task"`
}

// infoLayout is the layout every vector response uses.
var infoLayout = func() InfoLayout {
	var l InfoLayout
	for _, f := range infoFloats {
		l.Float64 = append(l.Float64, f.name)
	}
	l.Float64 = append(l.Float64, keyEpisodeReturn)
	l.Int64 = []string{keyStep, keySeed, keyEpisodeLength}
	l.Uint64 = []string{keySeed}
	for _, f := range infoBools {
		l.Bool = append(l.Bool, f.name)
	}
	l.PerTask = []string{keyApplied}
	return l
}()

// infoSections is the number of sections appendVecInfo writes.
const infoSections = 4

// appendFloat writes v as the shortest JSON number that reads back to the
// same float64, or null when v is not finite.
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func appendKey(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendInfo writes the info JSON object of one env (a single env's
// reset and step): step, seed, the float keys, the boolean keys, applied.
func appendInfo(b []byte, i *env.Info) []byte {
	b = append(b, `{"`+keyStep+`":`...)
	b = strconv.AppendInt(b, int64(i.Step), 10)
	b = appendKey(b, keySeed)
	b = strconv.AppendUint(b, i.Seed, 10)
	for _, f := range infoFloats {
		b = appendFloat(appendKey(b, f.name), f.val(i))
	}
	for _, f := range infoBools {
		b = strconv.AppendBool(appendKey(b, f.name), f.val(i))
	}
	b = append(appendKey(b, keyApplied), '[')
	for k, x := range i.Applied {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, x)
	}
	return append(b, ']', '}')
}

// appendVecInfo writes the info sections of a vector response (layout
// infoLayout). epReturn and epLen, when not nil, are each env's episode
// return and length where ended[i], else 0.
func appendVecInfo(b []byte, infos []env.Info, ended []bool, epReturn []float64, epLen []int, tasks int) []byte {
	n := len(infos)
	b = appendHeader(b, KindFloat64, len(infoLayout.Float64)*n)
	for _, f := range infoFloats {
		for k := range infos {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.val(&infos[k])))
		}
	}
	for k := range n {
		r := 0.0
		if epReturn != nil && ended[k] {
			r = epReturn[k]
		}
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r))
	}
	b = appendHeader(b, KindInt64, len(infoLayout.Int64)*n)
	for k := range infos {
		b = binary.LittleEndian.AppendUint64(b, uint64(int64(infos[k].Step)))
	}
	for k := range infos {
		b = binary.LittleEndian.AppendUint64(b, infos[k].Seed)
	}
	for k := range n {
		l := 0
		if epLen != nil && ended[k] {
			l = epLen[k]
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(int64(l)))
	}
	b = appendHeader(b, KindBool, len(infoLayout.Bool)*n)
	for _, f := range infoBools {
		for k := range infos {
			b = append(b, boolByte(f.val(&infos[k])))
		}
	}
	b = appendHeader(b, KindFloat64, n*tasks)
	for k := range infos {
		a := infos[k].Applied
		for j := range tasks {
			x := math.NaN()
			if j < len(a) {
				x = a[j]
			}
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	}
	return b
}

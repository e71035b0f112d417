package envserver

import (
	"math"
	"strconv"

	"streamscale/env"
)

// infoField is one key of the info JSON: its name and how to append the
// value for one env.
type infoField struct {
	name string
	val  func(b []byte, i *env.Info) []byte
}

func num(f func(*env.Info) float64) func([]byte, *env.Info) []byte {
	return func(b []byte, i *env.Info) []byte { return appendFloat(b, f(i)) }
}

func boolean(f func(*env.Info) bool) func([]byte, *env.Info) []byte {
	return func(b []byte, i *env.Info) []byte { return strconv.AppendBool(b, f(i)) }
}

// infoFields are the keys of every info, in order. Units as env.Info:
// rates in events/s, latencies in ms, CPU in millicores.
var infoFields = []infoField{
	{"step", func(b []byte, i *env.Info) []byte { return strconv.AppendInt(b, int64(i.Step), 10) }},
	{"seed", func(b []byte, i *env.Info) []byte { return strconv.AppendUint(b, i.Seed, 10) }},
	{"offered_rate", num(func(i *env.Info) float64 { return i.OfferedRate })},
	{"next_offered_rate", num(func(i *env.Info) float64 { return i.NextOfferedRate })},
	{"throughput", num(func(i *env.Info) float64 { return i.Throughput })},
	{"sink_events", num(func(i *env.Info) float64 { return i.SinkEvents })},
	{"p95_ms", num(func(i *env.Info) float64 { return i.P95MS })},
	{"mean_ms", num(func(i *env.Info) float64 { return i.MeanMS })},
	{"completed", boolean(func(i *env.Info) bool { return i.Completed })},
	{"violated", boolean(func(i *env.Info) bool { return i.Violated })},
	{"total_cpu", num(func(i *env.Info) float64 { return i.TotalCPU })},
	{"in_flight", num(func(i *env.Info) float64 { return i.InFlight })},
	{"reward_slo", num(func(i *env.Info) float64 { return i.Reward.SLO })},
	{"reward_risk", num(func(i *env.Info) float64 { return i.Reward.Risk })},
	{"reward_resource", num(func(i *env.Info) float64 { return i.Reward.Resource })},
	{"reward_progress", num(func(i *env.Info) float64 { return i.Reward.Progress })},
	{"reward_churn", num(func(i *env.Info) float64 { return i.Reward.Churn })},
	{"reward_recovery", num(func(i *env.Info) float64 { return i.Reward.Recovery })},
	{"reward_reconf", num(func(i *env.Info) float64 { return i.Reward.Reconf })},
	{"reward_total", num(func(i *env.Info) float64 { return i.Reward.Total })},
	{"applied", func(b []byte, i *env.Info) []byte { return appendFloats(b, i.Applied) }},
}

// appendFloat writes v as the shortest JSON number that reads back to the
// same float64, or null when v is not finite.
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func appendFloats(b []byte, v []float64) []byte {
	b = append(b, '[')
	for k, x := range v {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, x)
	}
	return append(b, ']')
}

// appendInfo writes the info JSON object of one env.
func appendInfo(b []byte, i *env.Info) []byte {
	b = append(b, '{')
	for k, f := range infoFields {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		b = f.val(b, i)
	}
	return append(b, '}')
}

// appendVecInfos writes the infos of a vector step column-wise, as
// Gymnasium batches vector infos: each key maps to a list with one entry
// per env; episode_return and episode_length are meaningful where ended.
func appendVecInfos(b []byte, res *env.VecResult, ended []bool) []byte {
	b = append(b, '{')
	for k, f := range infoFields {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':', '[')
		for i := range res.Infos {
			if i > 0 {
				b = append(b, ',')
			}
			b = f.val(b, &res.Infos[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"episode_return":[`...)
	for i, r := range res.EpisodeReturn {
		if i > 0 {
			b = append(b, ',')
		}
		if !ended[i] {
			r = 0
		}
		b = appendFloat(b, r)
	}
	b = append(b, `],"episode_length":[`...)
	for i, l := range res.EpisodeLength {
		if i > 0 {
			b = append(b, ',')
		}
		if !ended[i] {
			l = 0
		}
		b = strconv.AppendInt(b, int64(l), 10)
	}
	return append(b, ']', '}')
}

// appendVecResetInfo writes the info of a vector reset: the Reset seed
// of each env's first episode (env.VecSeed) and step −1.
func appendVecResetInfo(b []byte, base uint64, n int) []byte {
	b = append(b, `{"seed":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, env.VecSeed(base, i, 0), 10)
	}
	b = append(b, `],"step":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "-1"...)
	}
	return append(b, ']', '}')
}

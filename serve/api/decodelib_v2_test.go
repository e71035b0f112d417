//go:build goexperiment.jsonv2

package api

import jsonv2 "encoding/json/v2"

func init() {
	extraDecoders["encoding-json-v2"] = func(body []byte, v *libRequest) error {
		*v = libRequest{Observation: libObs{v.Observation.App[:0], v.Observation.Server[:0], v.Observation.Task[:0]}}
		return jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true))
	}
}

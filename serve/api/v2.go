package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// The Open Inference Protocol (KServe V2) REST routes, beside the v1
// ones. The protocol's model is a named set of input tensors in, output
// tensors out; here a model is a served policy, its inputs are the
// observation parts the policy reads (app [batch, 11], server
// [batch, servers, 5], task [batch, tasks, 15]: [batch] and the Box's
// shape), FP32 or FP64 and checked against the Box's bounds as on v1, and
// its outputs are action (INT64 [batch, len(nvec)], the per-dimension
// argmax) and value (FP32 [batch, 1], the critic's value; the policy's
// float32 value exactly). A residual policy also reads rule_targets
// (FP32 or FP64 [batch, tasks], the base rule's targets in millicores,
// doc.go) and also outputs targets (FP64 [batch, tasks], millicores, the
// corrected targets). Health answers are a status with an empty body
// (200 true, 400 false: the protocol's "4xx indicates false"); errors are
// {"error": "api: …"} with 400 for any malformed or mismatched request,
// 404 for an unknown model or version, 413, 415 and 503 as on v1.
//
// Protocol: kserve/open-inference-protocol, specification/protocol/
// inference_rest.md (health, server and model metadata, inference).

// v2Platform is the platform of every model's metadata.
const v2Platform = "streamscale_ppo"

// Output tensor names: every model's action and value, and a residual
// policy's corrected targets (FP64 [batch, tasks], millicores).
const (
	v2Action  = "action"
	v2Value   = "value"
	v2Targets = "targets"
)

// v2Model is a policy's protocol view, built once at load.
type v2Model struct {
	shapes [numKeys][]int // each observation part's Box shape; nil if the policy has no such part
	rule   int            // a residual policy's tasks: its rule_targets input is FP64 [batch, rule]; 0 for any other
	meta   []byte         // body of GET /v2/models/{name}
}

type v2Tensor struct {
	Name     string `json:"name"`
	Datatype string `json:"datatype"`
	Shape    []int  `json:"shape"`
}

// initV2 builds the protocol view of e (its card and layout are set).
func (e *entry) initV2() error {
	meta := struct {
		Name     string     `json:"name"`
		Versions []string   `json:"versions"`
		Platform string     `json:"platform"`
		Inputs   []v2Tensor `json:"inputs"`
		Outputs  []v2Tensor `json:"outputs"`
	}{Name: e.name, Versions: []string{e.version}, Platform: v2Platform}
	for k := range numKeys {
		if e.lay.n[k] < 0 {
			continue
		}
		shape := e.card.Spaces.Observation[keyNames[k]].Shape
		e.v2.shapes[k] = shape
		meta.Inputs = append(meta.Inputs, v2Tensor{keyNames[k], "FP32", append([]int{-1}, shape...)})
	}
	meta.Outputs = []v2Tensor{{v2Action, "INT64", []int{-1, len(e.nvec)}}, {v2Value, "FP32", []int{-1, 1}}}
	if e.res != nil {
		e.v2.rule = e.lay.rule
		meta.Inputs = append(meta.Inputs, v2Tensor{ruleTargetsKey, "FP64", []int{-1, e.lay.rule}})
		meta.Outputs = append(meta.Outputs, v2Tensor{v2Targets, "FP64", []int{-1, e.lay.rule}})
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("model metadata: %w", err)
	}
	e.v2.meta = b
	return nil
}

// failV2 writes err as the protocol's error object {"error": …}. A value
// that does not fit the policy is a 400 here, as every failed inference
// request is in the protocol.
func (s *Server) failV2(c *gin.Context, err *reqError) {
	s.metrics.errs[err.Kind].Inc()
	status := err.Status()
	if status == http.StatusUnprocessableEntity {
		status = http.StatusBadRequest
	}
	msg := err.Msg
	if err.Field != "" && !strings.Contains(msg, err.Field) {
		msg += " (" + err.Field + ")"
	}
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	c.Abort()
	writeBody(c, status, jsonType, b)
}

// health answers a protocol health request: 200 or 400, no body.
func health(c *gin.Context, ok bool) {
	status := http.StatusOK
	if !ok {
		status = http.StatusBadRequest
	}
	c.Status(status)
	c.Writer.WriteHeaderNow()
}

func (s *Server) v2Live(c *gin.Context)  { health(c, true) }
func (s *Server) v2Ready(c *gin.Context) { health(c, s.Ready()) }

// v2Server is GET /v2, the server metadata.
func (s *Server) v2Server(c *gin.Context) {
	version := s.cfg.Build.Commit
	if version == "" {
		version = "unknown"
	}
	b, _ := json.Marshal(struct {
		Name       string   `json:"name"`
		Version    string   `json:"version"`
		Extensions []string `json:"extensions"`
	}{"streamscale", version, []string{}})
	writeBody(c, http.StatusOK, jsonType, b)
}

// v2Entry looks the route's model (and version, if the route has one) up.
func (s *Server) v2Entry(c *gin.Context) (*entry, *reqError) {
	reg := s.reg.Load()
	if reg == nil {
		return nil, errNotReady
	}
	name := c.Param("name")
	e := reg.byName[name]
	if e == nil {
		return nil, newError(kindPolicyNotFound, "", "no model %.64q (serving %s)", name, strings.Join(reg.names, ", "))
	}
	if v, ok := c.Params.Get("version"); ok && v != e.version {
		return nil, newError(kindPolicyNotFound, "", "model %s has no version %.80q (serving version %s)", name, v, e.version)
	}
	return e, nil
}

func (s *Server) v2ModelMeta(c *gin.Context) {
	e, err := s.v2Entry(c)
	if err != nil {
		s.failV2(c, err)
		return
	}
	writeBody(c, http.StatusOK, jsonType, e.v2.meta)
}

// v2ModelReady: 200 for a loaded model of a server that is not draining,
// 400 while draining, 404 for a model (or version) it does not serve.
func (s *Server) v2ModelReady(c *gin.Context) {
	if s.reg.Load() == nil {
		health(c, false)
		return
	}
	if _, err := s.v2Entry(c); err != nil {
		s.failV2(c, err)
		return
	}
	health(c, !s.draining.Load())
}

// v2Infer is POST /v2/models/{name}[/versions/{version}]/infer.
func (s *Server) v2Infer(c *gin.Context) {
	e, rerr := s.v2Entry(c)
	if rerr != nil {
		s.failV2(c, rerr)
		return
	}
	if err := checkContentType(c.Request); err != nil {
		s.failV2(c, err)
		return
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	body, rerr := readBody(c.Request, sc.body, s.cfg.MaxBodyBytes)
	if rerr != nil {
		s.failV2(c, rerr)
		return
	}
	sc.body = body
	req, rerr := decodeInfer(body, &e.lay, &e.v2, s.cfg.MaxBatch, &sc.req)
	if rerr != nil {
		s.failV2(c, rerr)
		return
	}
	err := e.infer(sc)
	if err == nil {
		err = e.correct(sc)
	}
	if err != nil {
		s.logf("%v", err)
		s.failV2(c, newError(kindInternal, "", "model %s failed on this input", e.name))
		return
	}
	sc.out = e.appendInfer(sc.out[:0], sc, req)
	writeBody(c, http.StatusOK, jsonType, sc.out)
}

// appendInfer appends the inference response: the requested outputs in
// the requested order (all, action then value then a residual policy's
// targets, when none were named).
func (e *entry) appendInfer(b []byte, sc *scratch, req *inferRequest) []byte {
	n, dims := sc.req.n, len(e.nvec)
	b = append(b, `{"model_name":`...)
	b = strconv.AppendQuote(b, e.name)
	b = append(b, `,"model_version":"`...)
	b = append(b, e.version...)
	b = append(b, '"')
	if req.id != nil {
		b = append(b, `,"id":`...)
		b = strconv.AppendQuote(b, *req.id)
	}
	b = append(b, `,"outputs":[`...)
	outs := req.outputs
	if len(outs) == 0 {
		outs = v2Outputs[:2]
		if e.res != nil {
			outs = v2Outputs
		}
	}
	for i, o := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		switch o {
		case v2Action:
			b = append(b, `{"name":"action","datatype":"INT64","shape":[`...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(dims), 10)
			b = append(b, `],"data":[`...)
			for j, a := range sc.actions[:n*dims] {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(a), 10)
			}
		case v2Value:
			b = append(b, `{"name":"value","datatype":"FP32","shape":[`...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, `,1],"data":[`...)
			for j, v := range sc.values[:n] {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, v, 'g', -1, 32)
			}
		case v2Targets:
			b = append(b, `{"name":"targets","datatype":"FP64","shape":[`...)
			b = strconv.AppendInt(b, int64(n), 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(dims), 10)
			b = append(b, `],"data":[`...)
			for j, t := range sc.targets[:n*dims] {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, t, 'g', -1, 64)
			}
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// v2Outputs are the output names a request may ask for: the first two of
// any model, all of a residual policy's.
var v2Outputs = []string{v2Action, v2Value, v2Targets}

func validOutput(m *v2Model, name string) bool {
	if m.rule == 0 {
		return slices.Contains(v2Outputs[:2], name)
	}
	return slices.Contains(v2Outputs, name)
}

package api

import (
	"fmt"
	"net/http"
)

// errKind classifies an error response for the errors_total metric.
type errKind uint8

const (
	kindBadJSON          errKind = iota // body is not JSON (400)
	kindBadRequest                      // JSON of the wrong schema: types, unknown, duplicate or missing keys, conflicting options (400)
	kindInvalid                         // well-formed, but the values do not fit the policy: lengths, bounds, non-finite (422)
	kindTooLarge                        // body over the limit (413)
	kindBatchTooLarge                   // more observations than the batch limit (413)
	kindUnsupportedMedia                // Content-Type is not application/json (415)
	kindPolicyNotFound                  // no policy of that name (404)
	kindRouteNotFound                   // no route (404)
	kindMethodNotAllowed                // route exists for another method (405)
	kindUnauthorized                    // admin route without the right bearer token (401)
	kindNotReady                        // policies not loaded yet (503)
	kindReloadFailed                    // reload rejected, old policies kept (500)
	kindInternal                        // handler panic or non-finite policy output (500)
	kindTooManyReloads                  // admin reload within Config.ReloadInterval of the last, or during one (429)
	numKinds
)

var kindNames = [numKinds]string{
	"bad_json", "bad_request", "invalid_observation", "body_too_large", "batch_too_large",
	"unsupported_media_type", "policy_not_found", "route_not_found", "method_not_allowed",
	"unauthorized", "not_ready", "reload_failed", "internal", "too_many_reloads",
}

var kindStatus = [numKinds]int{
	http.StatusBadRequest, http.StatusBadRequest, http.StatusUnprocessableEntity,
	http.StatusRequestEntityTooLarge, http.StatusRequestEntityTooLarge,
	http.StatusUnsupportedMediaType, http.StatusNotFound, http.StatusNotFound,
	http.StatusMethodNotAllowed, http.StatusUnauthorized, http.StatusServiceUnavailable,
	http.StatusInternalServerError, http.StatusInternalServerError, http.StatusTooManyRequests,
}

// reqError is a request the server refused, as the JSON body
// {"error": Msg, "field": Field} with status Status.
type reqError struct {
	Kind  errKind
	Field string // JSON path of the offending value, e.g. observation.task[17]; may be empty
	Msg   string // complete message, "api: ..."
}

func (e *reqError) Error() string { return e.Msg }

// Status is the HTTP status of the response.
func (e *reqError) Status() int { return kindStatus[e.Kind] }

func newError(k errKind, field, format string, args ...any) *reqError {
	return &reqError{Kind: k, Field: field, Msg: "api: " + fmt.Sprintf(format, args...)}
}

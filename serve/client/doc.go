// Package client is a small Go client of the inference service
// (serve/api): Policies lists what is served, Act and ActBatch ask for
// actions. Observations are env.Observation values; options choose
// deterministic (default) or seeded sampling and probabilities.
//
// Failures are typed: a refusal by the server is an *Error carrying the
// HTTP status, the server's message and the offending field, and it
// matches one of the sentinel errors (ErrBadRequest, ErrInvalidObservation,
// ErrNotFound, ErrTooLarge, ErrUnauthorized, ErrUnavailable, ErrServer)
// under errors.Is; transport failures are wrapped, prefixed "client: ".
//
// A Client holds no mutable state and is safe for concurrent use. It does
// network I/O only through the *http.Client it is given.
package client

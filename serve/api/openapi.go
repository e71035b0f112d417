package api

import _ "embed"

// openapiDoc is the OpenAPI 3 description of the routes, served at
// GET /openapi.json; TestOpenAPIMatchesRoutes keeps it in sync.
//
//go:embed openapi.json
var openapiDoc []byte

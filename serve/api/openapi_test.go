package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The OpenAPI document lists exactly the registered routes, with the same
// methods (the admin routes included, as registered with a token).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s, err := New(Config{Dir: "unused", AdminToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var inDoc, registered []string
	for path, item := range doc.Paths {
		for k := range item {
			switch k {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				inDoc = append(inDoc, strings.ToUpper(k)+" "+path)
			}
		}
	}
	for _, r := range s.engine.Routes() {
		segs := strings.Split(r.Path, "/")
		for i, seg := range segs {
			if strings.HasPrefix(seg, ":") {
				segs[i] = "{" + seg[1:] + "}"
			}
		}
		registered = append(registered, r.Method+" "+strings.Join(segs, "/"))
	}
	slices.Sort(inDoc)
	slices.Sort(registered)
	if !slices.Equal(inDoc, registered) {
		t.Fatalf("OpenAPI document has\n  %s\nthe router has\n  %s", strings.Join(inDoc, "\n  "), strings.Join(registered, "\n  "))
	}
	// Every $ref resolves.
	var all map[string]any
	if err := json.Unmarshal(openapiDoc, &all); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref := x.(string)
					var node any = all
					for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
						m, ok := node.(map[string]any)
						if !ok || m[part] == nil {
							t.Fatalf("unresolved $ref %s", ref)
						}
						node = m[part]
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(all)
}

func TestOpenAPIServed(t *testing.T) {
	s := newTestServer(t, "", "")
	w := do(s, "GET", "/openapi.json", nil)
	okStatus(t, w)
	if w.Body.String() != string(openapiDoc) {
		t.Fatal("served document differs from the embedded one")
	}
}

package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The OpenAPI document lists exactly the registered routes, with the same
// methods (HEAD beside every GET; the admin routes included, as registered
// with a token), every operation documents 405, and the router answers
// 405 with exactly the documented methods in Allow.
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
	allowed := map[string][]string{} // path → methods in the document
	for path, item := range doc.Paths {
		for k, op := range item {
			switch k {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				inDoc = append(inDoc, strings.ToUpper(k)+" "+path)
				allowed[path] = append(allowed[path], strings.ToUpper(k))
				responses, _ := op.(map[string]any)["responses"].(map[string]any)
				if responses["405"] == nil {
					t.Errorf("%s %s: no 405 response", k, path)
				}
			}
		}
		if item["get"] != nil && item["head"] == nil {
			t.Errorf("GET %s without HEAD", path)
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
	// A method the document does not list gets 405 and the listed ones in Allow.
	for path, methods := range allowed {
		url := strings.ReplaceAll(path, "{name}", "pred")
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"} {
			if slices.Contains(methods, m) {
				continue
			}
			w := do(s, m, url, nil)
			if w.Code != 405 {
				t.Errorf("%s %s: status %d, want 405", m, url, w.Code)
				continue
			}
			allow := strings.Split(w.Header().Get("Allow"), ", ")
			slices.Sort(allow)
			slices.Sort(methods)
			if !slices.Equal(allow, methods) {
				t.Errorf("%s %s: Allow %v, document %v", m, url, allow, methods)
			}
		}
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

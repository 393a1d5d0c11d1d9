package hcloudfake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The spec is Hetzner's OpenAPI document (OpenAPI 3.0.3, cached 2026-03-01). doc.Validate() is not called:
// it fails on a bad example in /certificates.
//
// Two gaps of kin-openapi's defaults once let answers the spec refuses pass (issue 20: every
// DELETE /load_balancers/{id} answered 200 where the spec says 204):
//   - a status the operation does not list is accepted unless Options.IncludeResponseStatus is set;
//   - Hetzner writes its error ranges "4xx" and "5xx", but kin-openapi only looks up "4XX" and "5XX" (the
//     spelling OpenAPI 3.0 defines), so error answers matched nothing and were never checked.
//
// loadSpec renames the ranges and specOptions sets IncludeResponseStatus, so every answer is checked against
// the response its status selects, and a status the operation does not list fails.
var (
	specOnce   sync.Once
	specRouter routers.Router
	specErr    error
)

func loadSpec(tb testing.TB) routers.Router {
	tb.Helper()
	specOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile("testdata/hetzner.cloud.json")
		if err != nil {
			specErr = err
			return
		}
		upperStatusRanges(doc)
		specRouter, specErr = gorillamux.NewRouter(doc)
	})
	if specErr != nil {
		tb.Fatalf("load spec: %v", specErr)
	}
	return specRouter
}

// specTransport validates every request it sends and every response it gets against the spec; any
// mismatch fails the test.
type specTransport struct {
	t testing.TB
	// noRequestCheck skips validating requests (for tests that send bad input on purpose); responses are
	// still validated.
	noRequestCheck bool
	// seen, when not nil, records each (method, route) whose request and 2xx answer both passed the check;
	// only transports in front of a real Fake set it (see suiteCoverage).
	seen   *routeCoverage
	router routers.Router
	base   http.RoundTripper
}

// upperStatusRanges renames every operation's "1xx" … "5xx" response keys to "1XX" … "5XX", the only
// spelling kin-openapi's Responses.Status looks up.
func upperStatusRanges(doc *openapi3.T) {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.Responses == nil {
				continue
			}
			for code, ref := range op.Responses.Map() {
				if len(code) == 3 && strings.HasSuffix(code, "xx") {
					op.Responses.Delete(code)
					op.Responses.Set(strings.ToUpper(code), ref)
				}
			}
		}
	}
}

// specOptions fail an answer whose status the operation does not list (IncludeResponseStatus).
var specOptions = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}

func (s *specTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	checked := strings.HasPrefix(req.URL.Path, "/v1/")
	var input *openapi3filter.RequestValidationInput
	requestValid := true
	if checked {
		vreq := req.Clone(context.Background())
		vreq.URL = &url.URL{Scheme: "https", Host: "api.hetzner.cloud", Path: req.URL.Path, RawQuery: req.URL.RawQuery}
		vreq.Host = "api.hetzner.cloud"
		vbody := specQuirks(req.Method, req.URL.Path, body)
		vreq.Body = io.NopCloser(bytes.NewReader(vbody))
		vreq.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(vbody)), nil }
		route, params, err := s.router.FindRoute(vreq)
		if err != nil {
			s.t.Errorf("spec: no route for %s %s: %v", req.Method, req.URL.Path, err)
			checked = false
		} else {
			input = &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: specOptions}
			if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
				requestValid = false
				if !s.noRequestCheck {
					s.t.Errorf("spec: request %s %s %s: %v", req.Method, req.URL.Path, body, err)
				}
			}
		}
	}
	resp, err := s.base.RoundTrip(req)
	if err != nil || !checked {
		return resp, err
	}
	rbody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rbody))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(rbody)), Options: specOptions}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		s.t.Errorf("spec: response %d to %s %s: %v\nbody: %s", resp.StatusCode, req.Method, req.URL.Path, err, rbody)
	} else if s.seen != nil && requestValid && resp.StatusCode/100 == 2 {
		s.seen.add(req.Method, "/v1"+input.Route.Path)
	}
	return resp, nil
}

// specQuirks rewrites a request body where the spec disagrees with what Hetzner (and hcloud-go) send,
// so that only that one check is skipped:
//   - POST /servers: the spec types ssh_keys as strings, but the API takes names or IDs and hcloud-go sends
//     IDs as JSON integers.
func specQuirks(method, path string, body []byte) []byte {
	if method != http.MethodPost || path != "/v1/servers" || len(body) == 0 {
		return body
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	keys, ok := m["ssh_keys"].([]any)
	if !ok {
		return body
	}
	for i, k := range keys {
		if n, ok := k.(float64); ok {
			b, _ := json.Marshal(n)
			keys[i] = string(b)
		}
	}
	out, _ := json.Marshal(m)
	return out
}

// newSpecServer starts a fake and returns an HTTP client whose every /v1 call is checked against the spec.
func newSpecServer(t *testing.T, opts Options) (*Fake, string, *http.Client) {
	t.Helper()
	f, srv := NewServer(t, opts)
	return f, srv.URL, &http.Client{Transport: &specTransport{t: t, seen: suiteCoverage, router: loadSpec(t), base: http.DefaultTransport}}
}

// TestSpecTransportRefuses proves the checker refuses what the spec does not allow: a status the operation
// does not list, a success body of the wrong shape, and an error body that is not Hetzner's envelope.
func TestSpecTransportRefuses(t *testing.T) {
	t.Parallel()
	const action = `{"action":{"id":1,"command":"delete_load_balancer","status":"running","progress":0,` +
		`"started":"2026-01-01T00:00:00Z","finished":null,"resources":[{"id":1,"type":"load_balancer"}],"error":null}}`
	tests := []struct {
		name          string
		method, path  string
		status        int
		body          string
		wantRefusalOf string // "" when the answer is valid
	}{
		{"delete load balancer 204", "DELETE", "/v1/load_balancers/1", 204, "", ""},
		{"delete load balancer 200 with an action", "DELETE", "/v1/load_balancers/1", 200, action, "spec: response 200"},
		{"delete load balancer 201 with an action", "DELETE", "/v1/load_balancers/1", 201, action, "spec: response 201"},
		{"create network 200", "POST", "/v1/networks", 200, `{"network":{}}`, "spec: response 200"},
		{"get network, body not a network", "GET", "/v1/networks/1", 200, `{"network":{"id":"x"}}`, "spec: response 200"},
		{"not found, envelope", "GET", "/v1/networks/1", 404, `{"error":{"code":"not_found","message":"network not found","details":null}}`, ""},
		{"not found, no code", "GET", "/v1/networks/1", 404, `{"error":{"message":"network not found"}}`, "spec: response 404"},
		{"unavailable, not an envelope", "GET", "/v1/networks/1", 503, `{"message":"busy"}`, "spec: response 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recordingTB{TB: t}
			tr := &specTransport{t: rec, router: loadSpec(t), base: roundTripFunc(func(*http.Request) (*http.Response, error) {
				h := http.Header{}
				if tt.body != "" {
					h.Set("Content-Type", "application/json")
				}
				return &http.Response{StatusCode: tt.status, Header: h, Body: io.NopCloser(strings.NewReader(tt.body))}, nil
			})}
			var body io.Reader
			if tt.method == "POST" {
				body = strings.NewReader(`{"name":"n","ip_range":"10.0.0.0/16"}`)
			}
			req, _ := http.NewRequest(tt.method, "http://fake"+tt.path, body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch {
			case tt.wantRefusalOf == "" && len(rec.errs) != 0:
				t.Errorf("%s %s answered %d: spec check gave %q, want none", tt.method, tt.path, tt.status, rec.errs)
			case tt.wantRefusalOf != "" && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tt.wantRefusalOf)):
				t.Errorf("%s %s answered %d: spec check gave %q, want one %q error", tt.method, tt.path, tt.status, rec.errs, tt.wantRefusalOf)
			}
		})
	}
}

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
	router         routers.Router
	base           http.RoundTripper
}

var specOptions = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}

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
			if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil && !s.noRequestCheck {
				s.t.Errorf("spec: request %s %s %s: %v", req.Method, req.URL.Path, body, err)
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
	return f, srv.URL, &http.Client{Transport: &specTransport{t: t, router: loadSpec(t), base: http.DefaultTransport}}
}

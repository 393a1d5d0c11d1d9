package hcloudfake

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// routeCoverage records which routes the spec check saw answered with success: a request that passed the
// check and a 2xx answer that passed it too. Keys are "METHOD /v1/path" with every path parameter written
// "{}", so the fake's "{action_id}" and the spec's "{action_id}" or "{id}" compare equal.
type routeCoverage struct {
	mu   sync.Mutex
	seen map[string]bool
}

// suiteCoverage gathers the routes every spec-checked fake of this package's tests answered; TestMain
// fails the suite when a route of Fake.Routes is missing from it.
var suiteCoverage = &routeCoverage{seen: map[string]bool{}}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// routeKey is the comparable form of a method and path template.
func routeKey(method, path string) string {
	return method + " " + pathParam.ReplaceAllString(path, "{}")
}

func (c *routeCoverage) add(method, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[routeKey(method, path)] = true
}

// missing returns the routes ("METHOD /v1/path", as Fake.Routes gives them) that were never seen, sorted.
func (c *routeCoverage) missing(routes []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		if !c.seen[routeKey(method, path)] {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// TestMain runs the suite and then, when every test ran and passed, fails it if a route the fake serves
// was never answered with success under the spec check: a route without such a test could answer what the
// spec refuses unnoticed (issue 20: DELETE /load_balancers/{id} answered 200, not 204).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && wholeSuiteRan() {
		if missing := suiteCoverage.missing(New(Options{}).Routes()); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: spec coverage: %d routes of the fake were never answered with a spec-checked 2xx; "+
				"exercise each through newClient, newAPI(…, true) or newSpecServer:\n\t%s\n", len(missing), strings.Join(missing, "\n\t"))
			code = 1
		}
	}
	os.Exit(code) //nolint:forbidigo // TestMain reports the suite's result
}

// wholeSuiteRan reports whether no -run, -skip or -list flag narrowed the run (the coverage check only
// means something after every test ran).
func wholeSuiteRan() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}

// TestRoutesAreInSpec checks that each route the fake serves is an operation of the spec with the same
// method and path template, so that the spec check can validate it at all.
func TestRoutesAreInSpec(t *testing.T) {
	t.Parallel()
	router := loadSpec(t)
	routes := New(Options{}).Routes()
	if len(routes) == 0 {
		t.Fatal("Routes() is empty")
	}
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		req, err := http.NewRequest(method, "https://api.hetzner.cloud"+pathParam.ReplaceAllString(path, "1"), nil)
		if err != nil {
			t.Fatal(err)
		}
		route, _, err := router.FindRoute(req)
		if err != nil {
			t.Errorf("fake route %s is not in the spec: %v", r, err)
			continue
		}
		if got := routeKey(route.Method, "/v1"+route.Path); got != routeKey(method, path) {
			t.Errorf("fake route %s matches spec operation %s, want the same template", r, got)
		}
	}
}

// TestRouteCoverageMissing checks the bookkeeping TestMain relies on.
func TestRouteCoverageMissing(t *testing.T) {
	t.Parallel()
	routes := []string{"GET /v1/networks", "DELETE /v1/load_balancers/{id}", "GET /v1/servers/{id}/actions/{action_id}", "POST /v1/networks"}
	tests := []struct {
		name string
		seen [][2]string // method, spec path
		want []string
	}{
		{"nothing seen", nil, []string{"DELETE /v1/load_balancers/{id}", "GET /v1/networks", "GET /v1/servers/{id}/actions/{action_id}", "POST /v1/networks"}},
		{"parameter names differ", [][2]string{{"GET", "/v1/servers/{server}/actions/{id}"}, {"GET", "/v1/networks"}},
			[]string{"DELETE /v1/load_balancers/{id}", "POST /v1/networks"}},
		{"method counts", [][2]string{{"GET", "/v1/load_balancers/{id}"}, {"GET", "/v1/networks"}, {"POST", "/v1/networks"}},
			[]string{"DELETE /v1/load_balancers/{id}", "GET /v1/servers/{id}/actions/{action_id}"}},
		{"all seen", [][2]string{{"GET", "/v1/networks"}, {"POST", "/v1/networks"}, {"DELETE", "/v1/load_balancers/{id}"}, {"GET", "/v1/servers/{id}/actions/{x}"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &routeCoverage{seen: map[string]bool{}}
			for _, s := range tt.seen {
				c.add(s[0], s[1])
			}
			if diff := cmp.Diff(tt.want, c.missing(routes)); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

package hcloud_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/hcloud"
	"github.com/cdkx-dev/cdkx/adapters/hcloud/hcloudfake"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// handlerTransport serves requests with an http.Handler in memory, so that synctest's clock runs the
// fake's rate-limit bucket and the adapter's pacer alike.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// TestRateLimitAgainstTheFake: 150 placement groups created 20 at a time against hcloud-fake's bucket of
// 50 requests refilled at 1 per second take about 100 s and not one request is refused: the adapter slows
// down to the refill rate first.
func TestRateLimitAgainstTheFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := hcloudfake.New(hcloudfake.Options{Token: testToken, RateLimit: 50})
		p, err := hcloud.New(hcloud.Config{Token: testToken, Endpoint: "http://fake.test/v1",
			HTTPClient: &http.Client{Transport: handlerTransport{fake}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 20)
		for i := range 150 {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if _, err := p.Create(t.Context(), resource.CreateRequest{Type: hcloud.TypePlacementGroup,
					Properties: resource.Properties{"name": fmt.Sprintf("pg-%03d", i), "type": "spread"}}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		refused := 0
		for _, r := range fake.Requests() {
			if r.Status == http.StatusTooManyRequests {
				refused++
			}
		}
		took := time.Since(start)
		t.Logf("150 creates in %s, %d requests, %d refused", took, len(fake.Requests()), refused)
		if refused != 0 || took > 110*time.Second {
			t.Errorf("150 creates took %s with %d requests refused; want about 100 s and none", took, refused)
		}
	})
}

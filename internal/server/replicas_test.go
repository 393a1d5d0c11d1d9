package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"

	"github.com/google/go-cmp/cmp"
)

// cluster is two replicas of the service, each with its own pool and http.Server, on one fresh schema,
// sharing one settable clock and one API token.
type cluster struct {
	t     *testing.T
	clock *clock
	srv   [2]*Server
	ts    [2]*httptest.Server
	token string
	// collected counts the updates the replicas' collectors reported cancelling.
	collected atomic.Int64
}

// countingHandler is a slog handler that adds up the counts of "collector cancelled expired updates".
type countingHandler struct{ n *atomic.Int64 }

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h countingHandler) WithGroup(string) slog.Handler            { return h }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "collector cancelled expired updates" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "count" {
				h.n.Add(a.Value.Int64())
			}
			return true
		})
	}
	return nil
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	url := postgrestest.FreshSchema(t)
	c := &cluster{t: t, clock: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	for i := range c.srv {
		srv, err := Open(context.Background(), url, Options{Now: c.clock.now, Logger: slog.New(countingHandler{&c.collected}), MaxBody: 4 << 20})
		if err != nil {
			t.Fatalf("Open(replica %d) = %v", i, err)
		}
		c.srv[i] = srv
		c.ts[i] = httptest.NewServer(srv.Handler())
		// Both close twice at most (kill and cleanup): httptest.Server.Close and pgxpool.Pool.Close allow it.
		t.Cleanup(srv.Close)
		t.Cleanup(c.ts[i].Close)
	}
	tok, err := c.srv[0].CreateToken(context.Background(), "alice")
	if err != nil {
		t.Fatalf("CreateToken() = %v", err)
	}
	c.token = "token " + tok
	return c
}

// kill stops replica i as a crash would look from outside: its listener and its pool are gone.
func (c *cluster) kill(i int) {
	c.ts[i].CloseClientConnections()
	c.ts[i].Close()
	c.srv[i].Close()
}

// call sends a request to replica i (i%2); body is sent as is when string, else as its JSON. It does not
// use t, so goroutines may call it.
func (c *cluster) call(i int, method, path, auth string, body any) (int, []byte, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(data)
	}
	ts := c.ts[i%2]
	req, err := http.NewRequest(method, ts.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Accept", "application/vnd.pulumi+9")
	resp, err := ts.Client().Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s (replica %d): %w", method, path, i%2, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// check reports (with Errorf, so goroutines may call it) unless the request answers want; it returns the
// body and whether it did.
func (c *cluster) check(want, i int, method, path, auth string, body any) ([]byte, bool) {
	code, data, err := c.call(i, method, path, auth, body)
	if err != nil {
		c.t.Errorf("%v", err)
		return nil, false
	}
	if code != want {
		c.t.Errorf("%s %s (replica %d) = %d %s, want %d", method, path, i%2, code, data, want)
		return data, false
	}
	return data, true
}

// must is check that stops the test; call it only from the test's goroutine.
func (c *cluster) must(want, i int, method, path, auth string, body any) []byte {
	c.t.Helper()
	data, ok := c.check(want, i, method, path, auth, body)
	if !ok {
		c.t.FailNow()
	}
	return data
}

// begin creates an update on stack through replica i and starts it through replica j; it returns the
// update's path and lease header ("" when it failed, reported).
func (c *cluster) begin(stack string, i, j int) (string, string) {
	data, ok := c.check(200, i, "POST", "/api/stacks/org/proj/"+stack+"/update", c.token, map[string]any{"name": "proj"})
	if !ok {
		return "", ""
	}
	var cr struct{ UpdateID string }
	if err := json.Unmarshal(data, &cr); err != nil {
		c.t.Errorf("create: %s: %v", data, err)
		return "", ""
	}
	path := "/api/stacks/org/proj/" + stack + "/update/" + cr.UpdateID
	data, ok = c.check(200, j, "POST", path, c.token, map[string]any{})
	if !ok {
		return "", ""
	}
	var sr startUpdateResponse
	if err := json.Unmarshal(data, &sr); err != nil || sr.Token == "" {
		c.t.Errorf("start: %s: %v", data, err)
		return "", ""
	}
	return path, "update-token " + sr.Token
}

// stackState is what the database holds of a stack, read through replica i's pool.
func (c *cluster) stackState(i int, stack string) snapshot {
	c.t.Helper()
	e := &env{t: c.t, srv: c.srv[i%2]}
	return e.snapshot(stack)
}

// verbatim is a checkpointverbatim body: a deployment of one resource at revision seq.
func verbatim(seq int) string {
	return fmt.Sprintf(`{"version":3,"untypedDeployment":%s,"sequenceNumber":%d}`, revDeployment(seq), seq)
}

func revDeployment(rev int) string {
	return fmt.Sprintf(`{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"","version":""},"resources":[{"urn":"urn:pulumi:s::p::cdkx:core:Data::r","type":"cdkx:core:Data","custom":true,"outputs":{"rev":%d}}]}}`, rev)
}

func events(from, n int) string {
	var b bytes.Buffer
	b.WriteString(`{"events":[`)
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sequence":%d,"timestamp":1767322800,"diagnosticEvent":{"message":"m%d","severity":"info"}}`, from+k, from+k)
	}
	b.WriteString(`]}`)
	return b.String()
}

func TestReplicasOneActiveUpdate(t *testing.T) {
	c := newCluster(t)
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "dev"})
	const n = 20
	codes, bodies := make([]int, n), make([][]byte, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			var err error
			codes[i], bodies[i], err = c.call(i, "POST", "/api/stacks/org/proj/dev/update", c.token, `{}`)
			if err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	count, winner := map[int]int{}, -1
	for i, code := range codes {
		count[code]++
		if code == 200 {
			winner = i
		}
	}
	if diff := cmp.Diff(map[int]int{200: 1, 409: n - 1}, count); diff != "" {
		t.Fatalf("status codes of %d concurrent creates through two replicas (-want +got):\n%s", n, diff)
	}
	var cr struct{ UpdateID string }
	decode(t, bodies[winner], &cr)
	path := "/api/stacks/org/proj/dev/update/" + cr.UpdateID
	var sr startUpdateResponse
	decode(t, c.must(200, winner+1, "POST", path, c.token, map[string]any{}), &sr)
	lease := "update-token " + sr.Token
	for k := 1; k <= 10; k++ {
		c.must(200, k, "PATCH", path+"/checkpointverbatim", lease, verbatim(k))
		if got := c.stackState(k+1, "dev").Version; got != sr.Version+int64(k) {
			t.Errorf("after checkpoint %d (replica %d): stack version %d, want %d", k, k%2, got, sr.Version+int64(k))
		}
	}
	// While it runs, neither replica creates another update.
	for i := range 2 {
		c.must(409, i, "POST", "/api/stacks/org/proj/dev/update", c.token, `{}`)
	}
	c.must(200, 1, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
	if got := c.must(200, 0, "GET", "/api/stacks/org/proj/dev/export", c.token, nil); string(got) != revDeployment(10) {
		t.Errorf("export = %s, want the 10th checkpoint", got)
	}
	c.must(200, 0, "POST", "/api/stacks/org/proj/dev/update", c.token, `{}`)
}

func TestReplicasParallelStacks(t *testing.T) {
	c := newCluster(t)
	const stacks = 50
	var wg sync.WaitGroup
	for g := range stacks {
		wg.Go(func() {
			stack := fmt.Sprintf("s%02d", g)
			if _, ok := c.check(200, g, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": stack}); !ok {
				return
			}
			path, lease := c.begin(stack, g, g+1)
			if path == "" {
				return
			}
			for k := 1; k <= 3; k++ {
				if _, ok := c.check(200, g+k, "PATCH", path+"/checkpointverbatim", lease, verbatim(k)); !ok {
					return
				}
			}
			c.check(200, g+4, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
		})
	}
	wg.Wait()
	for g := range stacks {
		stack := fmt.Sprintf("s%02d", g)
		want := snapshot{Version: 3, Checkpoints: 3, Statuses: "succeeded", Expiries: "-"}
		if diff := cmp.Diff(want, c.stackState(g, stack)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", stack, diff)
		}
	}
}

func TestReplicaFailover(t *testing.T) {
	c := newCluster(t)
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "dev"})
	path, lease := c.begin("dev", 0, 0)
	if path == "" {
		t.FailNow()
	}
	c.must(200, 0, "PATCH", path+"/checkpointverbatim", lease, verbatim(1))
	c.must(200, 0, "POST", path+"/events/batch", lease, events(0, 5))

	c.kill(0)
	if _, _, err := c.call(0, "GET", "/healthz", "", nil); err == nil {
		t.Fatal("replica 0 still answers after kill")
	}

	// Replica 1 carries on with the same lease token.
	var rl struct {
		Token           string `json:"token"`
		TokenExpiration int64  `json:"tokenExpiration"`
	}
	decode(t, c.must(200, 1, "POST", path+"/renew_lease", lease, `{"duration":120}`), &rl)
	if "update-token "+rl.Token != lease {
		t.Errorf("renew_lease on replica 1 answered token %q, want the same lease", rl.Token)
	}
	for k := 2; k <= 4; k++ {
		c.must(200, 1, "PATCH", path+"/checkpointverbatim", lease, verbatim(k))
		c.must(200, 1, "POST", path+"/events/batch", lease, events(5*(k-1), 5))
	}
	c.must(200, 1, "POST", path+"/complete", lease, `{"status":"succeeded"}`)

	want := snapshot{Version: 4, Checkpoints: 4, Events: 20, Statuses: "succeeded", Expiries: "-"}
	if diff := cmp.Diff(want, c.stackState(1, "dev")); diff != "" {
		t.Errorf("after failover (-want +got):\n%s", diff)
	}
	for v := 1; v <= 4; v++ {
		if got := c.must(200, 1, "GET", fmt.Sprintf("/api/stacks/org/proj/dev/export/%d?checkpoint=true", v), c.token, nil); string(got) != revDeployment(v) {
			t.Errorf("export/%d = %s, want checkpoint %d", v, got, v)
		}
	}
	var ev struct{ Events []json.RawMessage }
	decode(t, c.must(200, 1, "GET", path+"/events", c.token, nil), &ev)
	if len(ev.Events) != 20 {
		t.Errorf("events replayed through replica 1: %d, want 20", len(ev.Events))
	}
	c.must(200, 1, "POST", "/api/stacks/org/proj/dev/update", c.token, `{}`)
}

// both sends the same request to the two replicas at once and checks that both answer want.
func (c *cluster) both(want int, method, path, auth string, body any) {
	c.t.Helper()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { c.check(want, i, method, path, auth, body) })
	}
	wg.Wait()
}

func TestReplicasDuplicateRequests(t *testing.T) {
	c := newCluster(t)
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "dev"})
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "other"})
	path, lease := c.begin("dev", 0, 1)
	if path == "" {
		t.FailNow()
	}
	unchanged := func(name string, f func()) {
		t.Helper()
		before := c.stackState(0, "dev")
		f()
		if diff := cmp.Diff(before, c.stackState(1, "dev")); diff != "" {
			t.Errorf("%s changed the database (-before +after):\n%s", name, diff)
		}
	}

	// checkpointverbatim: the same sequence number, sent to both replicas at once, is stored once.
	c.both(200, "PATCH", path+"/checkpointverbatim", lease, verbatim(1))
	if s := c.stackState(0, "dev"); s.Version != 1 || s.Checkpoints != 1 {
		t.Errorf("after a duplicated verbatim checkpoint: %+v, want version 1, 1 checkpoint", s)
	}
	unchanged("a repeated verbatim checkpoint", func() { c.both(200, "PATCH", path+"/checkpointverbatim", lease, verbatim(1)) })

	// checkpointdelta: likewise.
	prev, next := revDeployment(1), revDeployment(2)
	at := bytes.Index([]byte(prev), []byte(`"rev":1`)) + len(`"rev":`)
	sum := sha256.Sum256([]byte(next))
	delta := map[string]any{"version": 3, "checkpointHash": hex.EncodeToString(sum[:]), "sequenceNumber": 2,
		"deploymentDelta": []map[string]any{{"Span": map[string]any{"uri": "", "start": map[string]int{"line": 1, "column": at + 1, "offset": at},
			"end": map[string]int{"line": 1, "column": at + 2, "offset": at + 1}}, "NewText": "2"}}}
	c.both(200, "PATCH", path+"/checkpointdelta", lease, delta)
	if s := c.stackState(0, "dev"); s.Version != 2 || s.Checkpoints != 2 {
		t.Errorf("after a duplicated delta checkpoint: %+v, want version 2, 2 checkpoints", s)
	}
	unchanged("a repeated delta checkpoint", func() { c.both(200, "PATCH", path+"/checkpointdelta", lease, delta) })

	// events/batch: upserted by sequence.
	c.both(200, "POST", path+"/events/batch", lease, events(0, 10))
	if s := c.stackState(0, "dev"); s.Events != 10 {
		t.Errorf("after a duplicated event batch: %d events, want 10", s.Events)
	}
	unchanged("a repeated event batch", func() { c.both(200, "POST", path+"/events/batch", lease, events(0, 10)) })

	// complete: both answer 200, the update completes once.
	c.both(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
	unchanged("a repeated complete", func() { c.both(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`) })
	if got := c.must(200, 1, "GET", "/api/stacks/org/proj/dev/export", c.token, nil); string(got) != next {
		t.Errorf("export = %s, want %s", got, next)
	}

	// cancel (API token) of another stack's update: both answer 204, it is cancelled once.
	cr := c.must(200, 0, "POST", "/api/stacks/org/proj/other/update", c.token, `{}`)
	var u struct{ UpdateID string }
	decode(t, cr, &u)
	c.both(204, "POST", "/api/stacks/org/proj/other/update/"+u.UpdateID+"/cancel", c.token, nil)
	before := c.stackState(0, "other")
	if before.Statuses != "cancelled" {
		t.Errorf("other: status %q, want cancelled", before.Statuses)
	}
	c.both(204, "POST", "/api/stacks/org/proj/other/update/"+u.UpdateID+"/cancel", c.token, nil)
	if diff := cmp.Diff(before, c.stackState(1, "other")); diff != "" {
		t.Errorf("a repeated cancel changed the database (-before +after):\n%s", diff)
	}
	// Both stacks are free again.
	c.must(200, 1, "POST", "/api/stacks/org/proj/dev/update", c.token, `{}`)
	c.must(200, 0, "POST", "/api/stacks/org/proj/other/update", c.token, `{}`)
}

func TestReplicasCollect(t *testing.T) {
	c := newCluster(t)
	c.must(200, 0, "POST", "/api/stacks/org/proj", c.token, map[string]any{"stackName": "dev"})
	path, lease := c.begin("dev", 0, 1)
	if path == "" {
		t.FailNow()
	}
	c.must(200, 1, "PATCH", path+"/checkpointverbatim", lease, verbatim(1))
	c.clock.advance(DefaultLease + LeaseGrace + time.Second)

	// runBoth runs both replicas' collectors at once, each every interval, for d.
	runBoth := func(interval, d time.Duration) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				if err := c.srv[i].RunCollector(ctx, interval); err != nil {
					t.Errorf("RunCollector(replica %d) = %v", i, err)
				}
			})
		}
		time.Sleep(d)
		cancel()
		wg.Wait()
	}

	// While another session holds the collectors' advisory lock, neither replica collects.
	conn, err := c.srv[0].db.Pool().Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_lock($1)`, int64(0x63646b7873766763)); err != nil { // the collectors' lock (storage)
		t.Fatal(err)
	}
	runBoth(20*time.Millisecond, 300*time.Millisecond)
	if got := c.stackState(0, "dev").Statuses; got != "running" || c.collected.Load() != 0 {
		t.Errorf("with the lock held elsewhere: status %q, %d collected; want running, 0", got, c.collected.Load())
	}
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(0x63646b7873766763)); err != nil { // the collectors' lock (storage)
		t.Fatal(err)
	}
	conn.Release()

	// Both collectors, many cycles each: the expired update is cancelled exactly once.
	runBoth(20*time.Millisecond, 500*time.Millisecond)
	if got := c.collected.Load(); got != 1 {
		t.Errorf("collectors reported %d cancelled updates, want exactly 1", got)
	}
	// Collect itself, called on both replicas at once, finds nothing more.
	var extra atomic.Int64
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			n, err := c.srv[i].Collect(context.Background())
			if err != nil {
				t.Errorf("Collect(replica %d) = %v", i, err)
			}
			extra.Add(n)
		})
	}
	wg.Wait()
	if extra.Load() != 0 {
		t.Errorf("Collect() after the collectors cancelled %d more, want 0", extra.Load())
	}
	want := snapshot{Version: 1, Checkpoints: 1, Statuses: "cancelled", Expiries: "-"}
	if diff := cmp.Diff(want, c.stackState(1, "dev")); diff != "" {
		t.Errorf("after collection (-want +got):\n%s", diff)
	}
	// The stale lease is refused on both replicas; the next deploy proceeds.
	for i := range 2 {
		c.must(409, i, "PATCH", path+"/checkpointverbatim", lease, verbatim(2))
	}
	path2, lease2 := c.begin("dev", 1, 0)
	if path2 == "" {
		t.FailNow()
	}
	c.must(200, 0, "PATCH", path2+"/checkpointverbatim", lease2, verbatim(2))
	c.must(200, 1, "POST", path2+"/complete", lease2, `{"status":"succeeded"}`)
	if s := c.stackState(0, "dev"); s.Version != 2 || s.Statuses != "cancelled,succeeded" {
		t.Errorf("next deploy: %+v, want version 2, statuses cancelled,succeeded", s)
	}
}

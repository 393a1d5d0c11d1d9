package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// clock is a settable clock.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a server on a fresh schema, behind httptest, with one API token.
type env struct {
	t     *testing.T
	srv   *Server
	ts    *httptest.Server
	clock *clock
	token string
	// dbURL is the database of srv (a fresh schema), for a second replica or a restart.
	dbURL string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, Options{})
}

// newEnvWith is newEnv with opts (its clock and MaxBody are the test's).
func newEnvWith(t *testing.T, opts Options) *env {
	t.Helper()
	ck := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	opts.Now, opts.MaxBody = ck.now, 1<<20
	dbURL := postgrestest.FreshSchema(t)
	srv, err := Open(context.Background(), dbURL, opts)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	tok, err := srv.CreateToken(context.Background(), "alice")
	if err != nil {
		t.Fatalf("CreateToken() = %v", err)
	}
	return &env{t: t, srv: srv, ts: ts, clock: ck, token: "token " + tok, dbURL: dbURL}
}

// do sends a request; body is sent as is when []byte or string, else as its JSON.
func (e *env) do(method, path, auth string, body any, header ...string) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Accept", "application/vnd.pulumi+9")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// must sends a request and fails the test unless it answers want.
func (e *env) must(want int, method, path, auth string, body any) []byte {
	e.t.Helper()
	code, data := e.do(method, path, auth, body)
	if code != want {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, code, data, want)
	}
	return data
}

// createStack creates org/proj/name.
func (e *env) createStack(name string) {
	e.t.Helper()
	e.must(200, "POST", "/api/stacks/org/proj", e.token, map[string]any{"stackName": name})
}

// startUpdate creates and starts an update of kind on stack and returns its ID and lease auth header.
func (e *env) startUpdate(stack, kind string) (string, string) {
	e.t.Helper()
	var cr struct{ UpdateID string }
	decode(e.t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/"+kind, e.token, map[string]any{"name": "proj"}), &cr)
	var sr startUpdateResponse
	decode(e.t, e.must(200, "POST", "/api/stacks/org/proj/"+stack+"/"+kind+"/"+cr.UpdateID, e.token, map[string]any{}), &sr)
	return cr.UpdateID, "update-token " + sr.Token
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
}

// snapshot is what the database holds of a stack, to check that a refused request changed nothing.
type snapshot struct {
	Version, Checkpoints, Events int64
	Statuses                     string
	Expiries                     string
}

func (e *env) snapshot(stack string) snapshot {
	e.t.Helper()
	var s snapshot
	err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT s.version,
 (SELECT count(*) FROM svc_checkpoints c WHERE c.stack_id = s.id),
 (SELECT count(*) FROM svc_events v JOIN svc_updates u ON u.id = v.update_id WHERE u.stack_id = s.id),
 (SELECT coalesce(string_agg(u.status, ',' ORDER BY u.created_at, u.id), '') FROM svc_updates u WHERE u.stack_id = s.id),
 (SELECT coalesce(string_agg(coalesce(u.lease_expires_at::text, '-'), ',' ORDER BY u.created_at, u.id), '') FROM svc_updates u WHERE u.stack_id = s.id)
FROM svc_stacks s WHERE s.name = $1`, stack).Scan(&s.Version, &s.Checkpoints, &s.Events, &s.Statuses, &s.Expiries)
	if err != nil {
		e.t.Fatalf("snapshot(%s): %v", stack, err)
	}
	return s
}

// checkGolden compares the JSON got with testdata/name (parsed), rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	var w, g any
	decode(t, want, &w)
	decode(t, got, &g)
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

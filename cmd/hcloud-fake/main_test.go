package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRunServesTheFake starts the command on a free loopback port and checks that it serves the fake's
// API: a Load Balancer is created (201) and deleted with the spec's 204 and no body, and a second delete
// answers 404 not_found. The fake's answers are checked against the spec, route by route, in package
// hcloudfake's own suite.
func TestRunServesTheFake(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--token", "tok"}, pw)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listen line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimSpace(strings.TrimPrefix(line, "hcloud-fake listening on "))
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("listen line %q, want hcloud-fake listening on http://127.0.0.1:PORT/v1", line)
	}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := call("POST", "/load_balancers", `{"name":"lb","load_balancer_type":"lb11","location":"fsn1"}`)
	if status != http.StatusCreated || !strings.Contains(body, `"load_balancer":{"id":`) {
		t.Fatalf("POST /load_balancers = %d %s, want 201 with a load_balancer", status, body)
	}
	id := strings.SplitN(strings.SplitN(body, `"load_balancer":{"id":`, 2)[1], ",", 2)[0]
	for _, tt := range []struct {
		want     int
		wantBody string
	}{
		{http.StatusNoContent, ""},
		{http.StatusNotFound, `"code":"not_found"`},
	} {
		status, body := call("DELETE", "/load_balancers/"+id, "")
		if status != tt.want || (tt.wantBody == "" && body != "") || !strings.Contains(body, tt.wantBody) {
			t.Errorf("DELETE /load_balancers/%s = %d %q, want %d with %q", id, status, body, tt.want, tt.wantBody)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel = %v, want nil", err)
	}
}

// TestRunRefusesRemoteListen checks that a non-loopback address needs --allow-remote.
func TestRunRefusesRemoteListen(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"--listen", "0.0.0.0:0"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Errorf("run --listen 0.0.0.0:0 = %v, want an error naming --allow-remote", err)
	}
}

package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// limitServer is a Server without a database whose one route, POST /echo, reads its body with readBody
// under a limit of limit bytes and answers its length; hold, when not nil, is called after the body is
// read and before the answer. The route is wrapped as Handler wraps its routes (logRequests).
func limitServer(limit, budgetBytes int64, bodyTimeout time.Duration, hold func()) (*Server, http.Handler) {
	s := &Server{maxBody: 1 << 20, bodyTimeout: bodyTimeout, log: slog.New(slog.DiscardHandler)}
	if budgetBytes > 0 {
		s.budget = &budget{total: budgetBytes}
	}
	mux := http.NewServeMux()
	mux.Handle("POST /echo", s.limitBody(limit, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := s.readBody(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if hold != nil {
			hold()
		}
		writeJSON(w, http.StatusOK, map[string]int{"length": len(data)})
	})))
	return s, s.logRequests(mux)
}

func TestBodyLimit(t *testing.T) {
	const limit = 1000
	big := bytes.Repeat([]byte("x"), 100*limit)
	tests := []struct {
		name     string
		body     []byte
		gzip     bool
		chunked  bool // no Content-Length: the limit is found while reading
		wantCode int
	}{
		{name: "at the limit", body: big[:limit], wantCode: http.StatusOK},
		{name: "one byte over, Content-Length", body: big[:limit+1], wantCode: http.StatusRequestEntityTooLarge},
		{name: "one byte over, chunked", body: big[:limit+1], chunked: true, wantCode: http.StatusRequestEntityTooLarge},
		{name: "far over, chunked", body: big, chunked: true, wantCode: http.StatusRequestEntityTooLarge},
		{name: "gzip within the limit", body: big[:limit], gzip: true, wantCode: http.StatusOK},
		// 100 kB of x compress to a few hundred bytes: the limit holds after decoding.
		{name: "gzip over the limit once decoded", body: big, gzip: true, wantCode: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, h := limitServer(limit, 1<<20, time.Minute, nil)
			body := tt.body
			if tt.gzip {
				body = gzipped(t, body)
				if len(body) > limit {
					t.Fatalf("compressed body is %d bytes, want it under the limit", len(body))
				}
			}
			var rd io.Reader = bytes.NewReader(body)
			if tt.chunked {
				rd = io.MultiReader(rd) // hides the length from NewRequest
			}
			req := httptest.NewRequest("POST", "/echo", rd)
			if tt.gzip {
				req.Header.Set("Content-Encoding", "gzip")
			}
			if tt.chunked {
				req.ContentLength = -1
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantCode, rec.Body)
			}
			if tt.wantCode == http.StatusRequestEntityTooLarge {
				var e errorResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
					t.Fatal(err)
				}
				want := "Request Entity Too Large: POST /echo accepts bodies of at most 1000 bytes (after gzip decoding); send less per request"
				if diff := cmp.Diff(want, e.Message); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestBodyBudget(t *testing.T) {
	// A budget of two chunks: one request holding a 100 kB body (two chunks) spends it.
	read, release := make(chan struct{}), make(chan struct{})
	first := true
	s, h := limitServer(1<<20, 2*bodyChunk, time.Minute, func() {
		if first {
			first = false
			close(read)
			<-release
		}
	})
	body := bytes.Repeat([]byte("x"), 100_000)
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/echo", bytes.NewReader(body)))
		done <- rec
	}()
	<-read

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/echo", bytes.NewReader(body)))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("second request while the budget is spent = %d, Retry-After %q; want 503 with Retry-After 1: %s",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if !strings.Contains(rec.Body.String(), "budget of 131072 bytes") {
		t.Errorf("503 body = %s, want it to name the budget", rec.Body)
	}

	close(release)
	if rec := <-done; rec.Code != http.StatusOK {
		t.Fatalf("first request = %d: %s", rec.Code, rec.Body)
	}
	if s.budget.used != 0 {
		t.Fatalf("budget used after every request ended = %d, want 0", s.budget.used)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/echo", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("request after the budget was given back = %d: %s", rec.Code, rec.Body)
	}
}

func TestSlowBodyCutOff(t *testing.T) {
	_, h := limitServer(1<<20, 1<<20, 50*time.Millisecond, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// Headers announce 1000 bytes; 10 arrive, then nothing more.
	if _, err := io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound on a broken test, not a timing
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(data), "did not arrive within 50ms") {
		t.Fatalf("stalled body = %d %s, want 408 naming the timeout", resp.StatusCode, data)
	}
}

func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer func() { _ = ln.Close() }()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	dial()
	dial()
	third := dial()
	a1, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn)
	go func() {
		c, err := ln.Accept() // refuses the third, then waits for the fourth
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	_ = third.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("third connection from one address: %v, want a 503 answer", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("third connection = %d Retry-After %q, want 503 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	fourth := dial()
	c, ok := <-accepted
	if !ok {
		t.Fatal("Accept failed")
	}
	if got, want := c.RemoteAddr().String(), fourth.LocalAddr().String(); got != want {
		t.Fatalf("accepted %s after a connection closed, want the fourth connection %s", got, want)
	}
	_ = c.Close()
}

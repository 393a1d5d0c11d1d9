package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Request body limits per kind of route, after gzip decoding. A body beyond its route's limit is
// answered 413; Options.MaxBody replaces the limit of the state routes.
const (
	// SmallBodyLimit bounds the bodies of control calls (create stack or update, start, cancel,
	// renew_lease, complete, tags, rename, deployment transitions, heartbeats) and of the secrets
	// routes (…/encrypt, …/decrypt: one value; a secret of a stack is a config value, kilobytes).
	SmallBodyLimit = 256 << 10
	// BatchBodyLimit bounds …/batch-encrypt, …/batch-decrypt and …/events/batch: many small values
	// in one request (the Pulumi CLI batches the secrets of a whole stack, and engine events carry a
	// resource's inputs and outputs).
	BatchBodyLimit = 8 << 20
	// DeploymentBodyLimit bounds the deployment queue's creation (POST …/deployments): the records
	// carry their plan and its snapshot of the assembly, megabytes for a large stack.
	DeploymentBodyLimit = 32 << 20
	// ConsoleBodyLimit bounds the bodies of the web console's routes (Options.Console): forms of a login
	// (a token), an action (a CSRF token, a comment of at most state.MaxMessageBytes, percent-encoded)
	// or an unlock.
	ConsoleBodyLimit = 32 << 10
	// DefaultBodyBudget is the default of Options.BodyBudget: the bytes of request bodies all requests
	// in flight may hold together (two state bodies of DefaultMaxBody).
	DefaultBodyBudget = 2 * DefaultMaxBody
	// DefaultBodyTimeout is the default of Options.BodyTimeout.
	DefaultBodyTimeout = 60 * time.Second
)

// bodyChunk is the unit in which readBody takes bytes from the budget.
const bodyChunk = 64 << 10

// budget is a byte budget shared by the requests in flight: a request takes what its body holds and
// gives it back when its handler returns. It never waits: a request that finds it spent is answered
// 503 with Retry-After, so a flood of large bodies cannot take the server's memory, and slow bodies
// hold only what they sent.
type budget struct {
	mu    sync.Mutex
	total int64
	used  int64
}

// take takes n bytes, or reports false (taking nothing) when fewer than n are left.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.total {
		return false
	}
	b.used += n
	return true
}

// give gives back n bytes.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// bodyState is what limitBody tells readBody about a request: its limit, and the bytes of the budget it
// holds.
type bodyState struct {
	limit int64
	held  int64
	// rc clears the body deadline once the body is read, so that a long handler is not cut off; nil
	// without a deadline.
	rc *http.ResponseController
}

type bodyStateKey struct{}

// limitBody serves next with a body limit of limit bytes (after gzip decoding): a Content-Length beyond
// it is answered 413 before anything is read; readBody enforces it on what it reads, takes the bytes
// from the server's budget (503 when spent) and reads under the server's body deadline (408 beyond).
// The budget bytes the request held are given back when next returns.
func (s *Server) limitBody(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit && r.Header.Get("Content-Encoding") == "" {
			writeError(w, tooLarge(r, limit))
			return
		}
		st := &bodyState{limit: limit}
		if s.bodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			// The connection's read deadline, for this request's body; the server sets the next one
			// (idle timeout) after the answer. Fails only when the connection cannot have one
			// (httptest.ResponseRecorder), where no client is slow.
			st.rc = http.NewResponseController(w)
			_ = st.rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
		}
		defer func() {
			if st.held > 0 && s.budget != nil {
				s.budget.give(st.held)
			}
		}()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyStateKey{}, st)))
	})
}

// tooLarge is the 413 of a body beyond limit bytes.
func tooLarge(r *http.Request, limit int64) *apiError {
	return &apiError{code: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("Request Entity Too Large: %s accepts bodies of at most %d bytes (after gzip decoding); send less per request", r.Pattern, limit)}
}

// readLimited reads body (already gzip-decoded when it was gzip) into memory, at most st.limit bytes,
// taking each chunk from the budget before reading it; size is the body's length when known, else -1.
func (s *Server) readLimited(r *http.Request, body io.Reader, size int64, st *bodyState) ([]byte, error) {
	var data []byte
	for {
		if int64(len(data)) > st.limit {
			return nil, tooLarge(r, st.limit)
		}
		if len(data) == cap(data) {
			// Doubling, from one chunk, up to the limit and one byte (which tells a body beyond it); a
			// body of known length takes its length and one byte at once, so that it is never copied
			// (doubling a 64 MiB body doubled the peak RSS and the latency of others under the
			// large-import load of bench/server -abuse). So an announced Content-Length holds its share of
			// the budget until its bytes arrive or the body timeout ends the request.
			grow := min(max(int64(cap(data)), bodyChunk), st.limit+1-int64(cap(data)))
			if cap(data) == 0 && size >= 0 && size <= st.limit {
				grow = size + 1
			}
			grow = max(grow, 1)
			if s.budget != nil {
				if !s.budget.take(grow) {
					return nil, errorf(http.StatusServiceUnavailable,
						"Service Unavailable: the request bodies in flight hold the server's budget of %d bytes; retry in a second", s.budget.total)
				}
				st.held += grow
			}
			next := make([]byte, len(data), int64(cap(data))+grow)
			copy(next, data)
			data = next
		}
		n, err := body.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(data)) > st.limit {
				return nil, tooLarge(r, st.limit)
			}
			if st.rc != nil {
				_ = st.rc.SetReadDeadline(time.Time{})
			}
			return data, nil
		}
		if err != nil {
			if ae := s.bodyError(err); ae != nil {
				return nil, ae
			}
			return nil, err
		}
	}
}

// bodyError is the 408 of a body read that hit the body deadline, or nil for another error.
func (s *Server) bodyError(err error) *apiError {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &apiError{code: http.StatusRequestTimeout,
			msg: fmt.Sprintf("Request Timeout: the body did not arrive within %s; send it faster or in smaller requests", s.bodyTimeout)}
	}
	return nil
}

// LimitListener wraps ln so that it holds at most perAddr open connections from one client IP address:
// a connection beyond is closed as soon as it is accepted. perAddr <= 0 returns ln unchanged. Behind a
// proxy every client has the proxy's address: give the cap there, or disable it.
func LimitListener(ln net.Listener, perAddr int) net.Listener {
	if perAddr <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, max: perAddr, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			refuse(c, l.max)
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &limitConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[host]--; l.open[host] <= 0 {
				delete(l.open, host)
			}
			l.mu.Unlock()
		}}, nil
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// refuse answers 503 on a connection beyond the cap and closes it (writing at most for a second: the
// client may not read).
func refuse(c net.Conn, max int) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	msg := fmt.Sprintf(`{"code":503,"message":"Service Unavailable: this address holds %d open connections, the server's cap; reuse them or retry in a second"}`, max)
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
	_ = c.Close()
}

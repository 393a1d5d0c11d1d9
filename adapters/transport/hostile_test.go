package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// received is what a stand-in received of one request.
type received struct {
	Method, Host, Path string
	Header             http.Header
	Body               string
}

// recorder is a stand-in provider that records every request it receives, headers and body, before
// answering it with its handler.
type recorder struct {
	*httptest.Server
	mu  sync.Mutex
	got []received
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, received{Method: r.Method, Host: r.Host, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(b)})
		rec.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *recorder) requests() []received {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]received(nil), rec.got...)
}

// paths lists the paths of the requests received with the given Host header ("" for all).
func (rec *recorder) paths(host string) []string {
	var ps []string
	for _, r := range rec.requests() {
		if host == "" || r.Host == host {
			ps = append(ps, r.Path)
		}
	}
	return ps
}

// hostileClient is a JSON client whose every request carries the credentials an adapter may send: an API
// key, basic auth, and a header the adapter marks as a credential.
func hostileClient(opts transport.Options) *transport.JSON {
	opts.Provider = "test"
	opts.URLSetting = "TEST_API_URL"
	opts.Service = "Test"
	opts.Retry = tiny
	opts.CredentialHeaders = []string{"X-Custom-Token"}
	return &transport.JSON{Client: transport.New(opts), Auth: func(r *http.Request) {
		r.Header.Set("X-API-Key", "key-123")
		r.Header.Set("X-Custom-Token", "custom-456")
		r.SetBasicAuth("admin", "basic-789")
	}}
}

// drip writes the start of a JSON answer and then nothing more until the client goes away.
func drip(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"a":`)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// TestHostileAnswers sends a PUT whose body holds a password (as RabbitMQ's user PUT does) to a stand-in
// that answers as an attacker would, and checks what Call returns, what the stand-in and the other host
// or port received, and that no secret is in the error.
func TestHostileAnswers(t *testing.T) {
	t.Parallel()
	const password = "user-password-s3cret"
	// other stands for another port (and another host by its Host header): it must receive nothing.
	other := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{}`) })
	big := `{"a":"` + strings.Repeat("x", 4<<10) + `"}`
	for _, tc := range []struct {
		name string
		// answer is the stand-in's handler; self is its own URL.
		answer func(self string) http.HandlerFunc
		opts   transport.Options
		// userInURL puts credentials into the request URL.
		userInURL bool
		// wantErr lists substrings of the error; nil wants success.
		wantErr []string
		// wantAs checks the error's type.
		wantAs func(error) bool
		// wantPaths is what the stand-in received, under the stand-in's own Host.
		wantPaths []string
		// check looks at the stand-in's requests further.
		check func(t *testing.T, got []received)
	}{{
		name: "307 to another port",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
			}
		},
		wantErr:   []string{"redirected to " + other.URL + "/steal", "another scheme, host or port than TEST_API_URL", "check TEST_API_URL"},
		wantAs:    isRedirect,
		wantPaths: []string{"/users/bob"},
	}, {
		name: "308 to another host on the same port",
		answer: func(self string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				u, _ := url.Parse(self)
				http.Redirect(w, r, "http://localhost:"+u.Port()+"/steal", http.StatusPermanentRedirect)
			}
		},
		wantErr:   []string{"/steal, another scheme, host or port than TEST_API_URL"},
		wantAs:    isRedirect,
		wantPaths: []string{"/users/bob"},
	}, {
		name: "302 to another scheme",
		answer: func(self string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, strings.Replace(self, "http://", "https://", 1)+"/steal", http.StatusFound)
			}
		},
		wantErr:   []string{"another scheme, host or port than TEST_API_URL"},
		wantAs:    isRedirect,
		wantPaths: []string{"/users/bob"},
	}, {
		name: "same-origin 307 is followed without credentials",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/users/bob" {
					http.Redirect(w, r, "/moved/bob", http.StatusTemporaryRedirect)
					return
				}
				_, _ = io.WriteString(w, `{"a":"ok"}`)
			}
		},
		wantPaths: []string{"/users/bob", "/moved/bob"},
		check: func(t *testing.T, got []received) {
			if len(got) != 2 {
				return
			}
			first, moved := got[0], got[1]
			for _, h := range []string{"X-Api-Key", "X-Custom-Token", "Authorization"} {
				if first.Header.Get(h) == "" {
					t.Errorf("first request has no %s: the test sends no credentials", h)
				}
				if v := moved.Header.Get(h); v != "" {
					t.Errorf("redirected request carries %s: %q, want it stripped", h, v)
				}
			}
			if moved.Body != first.Body {
				t.Errorf("redirected 307 body = %q, want the original body resent to the same origin", moved.Body)
			}
		},
	}, {
		name: "redirect loop",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/users/bob" {
					http.Redirect(w, r, "/b", http.StatusFound)
					return
				}
				http.Redirect(w, r, "/users/bob", http.StatusFound)
			}
		},
		wantErr:   []string{"redirect loop: ", "/b redirected back to ", "/users/bob; check TEST_API_URL"},
		wantAs:    isRedirect,
		wantPaths: []string{"/users/bob", "/b"},
	}, {
		name: "endless redirects",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
			}
		},
		wantErr:   []string{fmt.Sprintf("stopped after %d redirects", transport.MaxRedirects), "check TEST_API_URL"},
		wantAs:    isRedirect,
		wantPaths: []string{"/users/bob", "/users/bobx", "/users/bobxx", "/users/bobxxx", "/users/bobxxxx", "/users/bobxxxxx"},
	}, {
		name: "body over the cap, streamed",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, big[:100])
				w.(http.Flusher).Flush() // no Content-Length: the cap must count
				_, _ = io.WriteString(w, big[100:])
			}
		},
		opts:      transport.Options{Limits: transport.Limits{MaxBody: 1 << 10}},
		wantErr:   []string{"test: PUT ", "/users/bob: the answer is larger than the 1 KiB cap on response bodies: refused"},
		wantAs:    func(err error) bool { return errors.As(err, new(*transport.BodyTooLargeError)) },
		wantPaths: []string{"/users/bob"},
	}, {
		name: "body over the cap, announced",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, big) }
		},
		opts:      transport.Options{Limits: transport.Limits{MaxBody: 1 << 10}},
		wantErr:   []string{"larger than the 1 KiB cap"},
		wantAs:    func(err error) bool { return errors.As(err, new(*transport.BodyTooLargeError)) },
		wantPaths: []string{"/users/bob"},
	}, {
		name:      "body that drips forever",
		answer:    func(string) http.HandlerFunc { return drip },
		opts:      transport.Options{Limits: transport.Limits{BodyTimeout: 50 * time.Millisecond}},
		wantErr:   []string{"/users/bob: no complete answer within the 50ms body read deadline"},
		wantAs:    isTimeout("body read"),
		wantPaths: []string{"/users/bob"},
	}, {
		name: "headers that never come",
		answer: func(string) http.HandlerFunc {
			return func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
		},
		opts:      transport.Options{Limits: transport.Limits{CallTimeout: 50 * time.Millisecond}},
		wantErr:   []string{"/users/bob: no complete answer within the 50ms call deadline"},
		wantAs:    isTimeout("call"),
		wantPaths: []string{"/users/bob"},
	}, {
		name: "invalid JSON",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"a": nope}`) }
		},
		wantErr:   []string{"/users/bob: decode 200 response: invalid character"},
		wantPaths: []string{"/users/bob"},
	}, {
		name: "credentials in the URL, 4xx",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusForbidden) }
		},
		userInURL: true,
		wantErr:   []string{"test: PUT http://127.0.0.1:", "/users/bob: 403: no"},
		wantPaths: []string{"/users/bob"},
	}, {
		name: "credentials in the URL, retries run out",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }
		},
		userInURL: true,
		wantErr:   []string{"/users/bob: giving up after 4 attempts: 503: busy"},
		wantPaths: []string{"/users/bob", "/users/bob", "/users/bob", "/users/bob"},
	}, {
		name: "credentials in the URL, redirect to another port",
		answer: func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://u:url-pass@"+strings.TrimPrefix(other.URL, "http://")+"/steal", http.StatusTemporaryRedirect)
			}
		},
		userInURL: true,
		wantErr:   []string{"redirected to " + other.URL + "/steal,"},
		wantAs:    isRedirect,
		wantPaths: []string{"/users/bob"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var self string
			api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { tc.answer(self)(w, r) })
			self = api.URL
			target := api.URL + "/users/bob"
			if tc.userInURL {
				target = "http://u:url-pass@" + strings.TrimPrefix(api.URL, "http://") + "/users/bob"
			}
			var out struct{ A string }
			start := time.Now()
			_, err := hostileClient(tc.opts).Call(t.Context(), http.MethodPut, target, map[string]string{"password": password}, &out, password)
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("Call took %s, want it ended by its deadline", elapsed)
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Call = %v, want success", err)
			case tc.wantErr != nil && err == nil:
				t.Fatalf("Call succeeded (out %+v), want an error with %q", out, tc.wantErr)
			}
			if err != nil {
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error = %q\nwant it to contain %q", err, want)
					}
				}
				for _, secret := range []string{password, "url-pass", "key-123", "basic-789", "custom-456"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q holds the secret %q", err, secret)
					}
				}
				if out.A != "" {
					t.Errorf("out = %+v after an error, want nothing decoded", out)
				}
			}
			if tc.wantAs != nil && !tc.wantAs(err) {
				t.Errorf("error %v (%T) is not of the expected type", err, err)
			}
			if diff := cmp.Diff(tc.wantPaths, api.paths(strings.TrimPrefix(api.URL, "http://"))); diff != "" {
				t.Errorf("stand-in requests (-want +got):\n%s", diff)
			}
			for _, r := range api.requests() {
				if r.Host != strings.TrimPrefix(api.URL, "http://") {
					t.Errorf("a request for the other host %s reached the stand-in: %s %s %v %q", r.Host, r.Method, r.Path, r.Header, r.Body)
				}
			}
			if tc.check != nil {
				tc.check(t, api.requests())
			}
		})
	}
	t.Cleanup(func() {
		if got := other.requests(); len(got) != 0 {
			t.Errorf("the other port received %d requests, want none: %+v", len(got), got)
		}
	})
}

func isRedirect(err error) bool { return errors.As(err, new(*transport.RedirectError)) }

func isTimeout(what string) func(error) bool {
	return func(err error) bool {
		var te *transport.TimeoutError
		return errors.As(err, &te) && te.What == what && errors.Is(err, context.DeadlineExceeded)
	}
}

// TestCancelEndsADrippingBody cancels the run's context while an answer drips: the call ends at once
// with the context's error, long before the body read's default deadline of a minute.
func TestCancelEndsADrippingBody(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var once sync.Once
	api := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"a":`)
		w.(http.Flusher).Flush()
		once.Do(func() { close(started) })
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	start := time.Now()
	var out struct{ A string }
	_, err := hostileClient(transport.Options{}).Call(ctx, http.MethodGet, api.URL+"/zones", nil, &out)
	elapsed := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Call = %v, want an error wrapping context.Canceled", err)
	}
	if want := "test: GET " + api.URL + "/zones: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %q, want it to start with %q", err, want)
	}
	if elapsed > 10*time.Second {
		t.Errorf("Call took %s after the cancel, want it to end at once", elapsed)
	}
	if got := len(api.requests()); got != 1 {
		t.Errorf("stand-in received %d requests, want 1 (no retry after a cancel)", got)
	}
}

// TestDoCapsTheBody checks the cap for a caller of Client.Do that reads the body itself.
func TestDoCapsTheBody(t *testing.T) {
	t.Parallel()
	api := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 10))
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, strings.Repeat("x", 2000))
	})
	c := transport.New(transport.Options{Provider: "test", Limits: transport.Limits{MaxBody: 1000}})
	resp, err := get(t, c, api.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	var tl *transport.BodyTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1000 {
		t.Fatalf("ReadAll = %d bytes, %v; want a *BodyTooLargeError with Limit 1000", len(b), err)
	}
	if len(b) > 1001 {
		t.Errorf("read %d bytes, want at most the cap and one", len(b))
	}
}

// TestProviderErrorURLHasNoCredentials checks the URL that JSON hands to the adapter's Error hook.
func TestProviderErrorURLHasNoCredentials(t *testing.T) {
	t.Parallel()
	api := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	var hookURL string
	j := hostileClient(transport.Options{})
	j.Error = func(method, u string, resp *http.Response, _ []byte) error {
		hookURL = u
		return &resource.ProviderError{Provider: "test", Method: method, URL: u, Status: resp.StatusCode}
	}
	_, err := j.Call(t.Context(), http.MethodGet, "http://u:url-pass@"+strings.TrimPrefix(api.URL, "http://")+"/x?name=a", nil, nil)
	if err == nil || strings.Contains(err.Error(), "url-pass") {
		t.Fatalf("Call = %v, want a 404 error without the URL's password", err)
	}
	if want := api.URL + "/x?name=a"; hookURL != want {
		t.Errorf("Error hook URL = %q, want %q", hookURL, want)
	}
}

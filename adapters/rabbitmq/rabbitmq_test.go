package rabbitmq_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/internal/adaptertest"
	"github.com/cdkx-dev/cdkx/adapters/rabbitmq"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

var _ engine.Provider = (*rabbitmq.Provider)(nil)

// TestInfo checks what the provider declares, configured or not: the engine reads its default limit of
// calls in flight and its ability to locate interrupted creates from this value alone.
func TestInfo(t *testing.T) {
	t.Parallel()
	_, p := newFake(t)
	for _, info := range []resource.ProviderInfo{p.Info(), (&rabbitmq.Provider{}).Info()} {
		if info.Name != "rabbitmq" || info.DefaultConcurrency != 4 || !info.CanLocate || len(info.Schemas) != 7 {
			t.Errorf("Info() = {Name: %q, DefaultConcurrency: %d, CanLocate: %t, %d schemas}, want {rabbitmq, 4, true, 7}",
				info.Name, info.DefaultConcurrency, info.CanLocate, len(info.Schemas))
		}
	}
}

func TestLoginFailedIsNotRetried(t *testing.T) {
	t.Parallel()
	// The fake fails the test on a second request.
	f, p := newFake(t, exchange{Method: "GET", Path: "/api/vhosts/app", Status: 401, JSON: loginFailed,
		Header: map[string]string{"WWW-Authenticate": `Basic realm="RabbitMQ Management"`}})
	_, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app"})
	pe := adaptertest.ProviderError(t, err)
	want := "rabbitmq: GET " + f.url("/api/vhosts/app") + ": 401: Login failed: check RABBITMQ_USERNAME and RABBITMQ_PASSWORD"
	if pe.Status != 401 || err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
	if errors.Is(err, resource.ErrNotFound) || strings.Contains(err.Error(), testPass) {
		t.Errorf("error %v is ErrNotFound or shows the password", err)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json, want string
	}{
		{"reserved name", accessRefused,
			`Access refused. (RabbitMQ reserves exchange and queue names starting with "amq.", and the default exchange cannot be bound)`},
		{"not administrator", `{"error":"not_authorised","reason":"Not administrator user"}`,
			"Not administrator user: the user in RABBITMQ_USERNAME needs the administrator tag"},
		{"no vhost access", `{"error":"not_authorised","reason":"User not authorised to access virtual host"}`,
			"User not authorised to access virtual host (check the tags and vhost permissions of the user in RABBITMQ_USERNAME)"},
		{"not JSON", "", "Login failed: check RABBITMQ_USERNAME and RABBITMQ_PASSWORD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := exchange{Method: "GET", Path: "/api/exchanges/app/amq.x", Status: 401, JSON: tt.json}
			if tt.json == "" {
				x.Text = "Unauthorized"
			}
			_, p := newFake(t, x)
			_, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeExchange, PhysicalID: "app/amq.x"})
			if pe := adaptertest.ProviderError(t, err); pe.Status != 401 || pe.Message != tt.want {
				t.Errorf("Message = %q, want %q", pe.Message, tt.want)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		json   string
		text   string
		want   string
	}{
		{"reason", 400, `{"error":"bad_request","reason":"inequivalent arg 'type' for exchange 'orders' in vhost 'app': received 'fanout' but current is 'topic'"}`, "",
			"inequivalent arg 'type' for exchange 'orders' in vhost 'app': received 'fanout' but current is 'topic'"},
		{"validation, HTML-escaped", 400, `{"error":"bad_request","reason":"Validation failed\n\n[{&lt;&lt;\"bogus-key\"&gt;&gt;,&lt;&lt;\"dlx\"&gt;&gt;}] are not recognised policy settings\n"}`, "",
			`Validation failed [{<<"bogus-key">>,<<"dlx">>}] are not recognised policy settings`},
		{"Erlang term reason", 400, `{"error":"bad_request","reason":["invalid_regexp",[40],[[109,105,115,115,105,110,103,32,41],1]]}`, "",
			`["invalid_regexp","(",["missing )",1]]`},
		{"Erlang string error", 500, `{"error":[69,114,114,111,114,32,111,99,99,117,114,101,100],"reason":"invalid_queue_type"}`, "",
			"invalid_queue_type"},
		{"error only", 400, `{"error":"bad_request"}`, "", "bad_request"},
		{"proxy text", 400, "", "Bad Request from the proxy", "Bad Request from the proxy"},
		{"outside the API", 406, "", "", "Not Acceptable (not an answer of the management API: check that RABBITMQ_API_URL is its base URL, e.g. http://127.0.0.1:15672)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := newFake(t, exchange{Method: "DELETE", Path: "/api/policies/app/p", Status: tt.status, JSON: tt.json, Text: tt.text})
			err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypePolicy, PhysicalID: "app/p"})
			if pe := adaptertest.ProviderError(t, err); pe.Status != tt.status || pe.Message != tt.want || pe.Kind != nil {
				t.Errorf("ProviderError = %d %q (kind %v), want %d %q", pe.Status, pe.Message, pe.Kind, tt.status, tt.want)
			}
		})
	}
}

func TestInternalServerErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		get404("/api/vhosts/app"),
		exchange{Method: "PUT", Path: "/api/vhosts/app", Status: 500, Body: `{"description":"","tags":""}`,
			JSON: `{"error":[69,114,114,111,114],"reason":"timeout"}`})
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeVirtualHost, Properties: adaptertest.Props(t, `{"name":"app"}`)})
	if pe := adaptertest.ProviderError(t, err); pe.Status != 500 || pe.Message != "timeout" {
		t.Errorf("error = %v, want 500 timeout after one attempt", err)
	}
}

func TestUnavailableIsRetried(t *testing.T) {
	t.Parallel()
	busy := exchange{Method: "DELETE", Path: "/api/queues/app/q", Status: 503, Text: "Service Unavailable"}
	f, p := newFake(t, busy, busy, busy)
	err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeQueue, PhysicalID: "app/q"})
	var re *transport.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 {
		t.Fatalf("Delete error = %v, want a RetryError after 3 attempts", err)
	}
	want := "rabbitmq: DELETE " + f.url("/api/queues/app/q") + ": giving up after 3 attempts: 503: Service Unavailable"
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPasswordsNeverShow(t *testing.T) {
	t.Parallel()
	const userPass = "s3cret-user-pass"
	const hash = "VQwbveGlt1brOD5KPWUw3cNDSuKCC6j9CX2VTmMpcPYKw6Y9"
	busy := exchange{Method: "PUT", Path: "/api/users/order-service", Status: 503, Body: `{"password":"` + userPass + `","tags":""}`,
		JSON: `{"error":"unavailable","reason":"cannot set password ` + userPass + ` for now (admin ` + testPass + `)"}`}
	f := startFake(t,
		get404("/api/users/order-service"), busy, busy,
		exchange{Method: "PUT", Path: "/api/users/order-service", Status: 400, Body: `{"password":"` + userPass + `","tags":""}`,
			JSON: `{"error":"bad_request","reason":"bad password ` + userPass + `"}`},
		exchange{Method: "GET", Path: "/api/users/order-service", Status: 200,
			JSON: `{"name":"order-service","password_hash":"` + hash + `","hashing_algorithm":"rabbit_password_hashing_sha256","tags":[],"limits":{}}`},
		exchange{Method: "PUT", Path: "/api/users/order-service", Status: 400,
			Body: `{"password_hash":"` + hash + `","hashing_algorithm":"rabbit_password_hashing_sha256","tags":"x"}`,
			JSON: `{"error":"bad_request","reason":"cannot keep hash ` + hash + `"}`},
	)
	var logs syncBuffer
	p, err := rabbitmq.New(rabbitmq.Config{URL: f.URL, Username: testUser, Password: testPass, Retry: fastRetry,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	user := adaptertest.Props(t, `{"name":"order-service","password":"`+userPass+`"}`)
	_, createErr := p.Create(t.Context(), resource.CreateRequest{Type: rabbitmq.TypeUser, Properties: user})
	if pe := adaptertest.ProviderError(t, createErr); pe.Status != 400 || pe.Message != "bad password REDACTED" {
		t.Errorf("Create error = %v, want 400 bad password REDACTED", createErr)
	}
	_, updateErr := p.Update(t.Context(), resource.UpdateRequest{Type: rabbitmq.TypeUser, PhysicalID: "order-service",
		Old: user, New: adaptertest.Props(t, `{"name":"order-service","password":"`+userPass+`","tags":["x"]}`), Changed: []string{"tags"}})
	if pe := adaptertest.ProviderError(t, updateErr); pe.Status != 400 || pe.Message != "cannot keep hash REDACTED" {
		t.Errorf("Update error = %v, want 400 cannot keep hash REDACTED", updateErr)
	}
	if !strings.Contains(logs.String(), "PUT") {
		t.Errorf("the logger recorded no attempt:\n%s", logs.String())
	}
	for _, secret := range []string{userPass, testPass, hash} {
		for what, text := range map[string]string{"create error": createErr.Error(), "update error": updateErr.Error(), "logs": logs.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows secret %q:\n%s", what, secret, text)
			}
		}
	}
}

func TestWrongURLIsNotNotFound(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "DELETE", Path: "/api/vhosts/app", Status: 404, Text: "404 page not found"},
		exchange{Method: "GET", Path: "/api/whoami", Status: 404, Text: "404 page not found"},
	)
	err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app"})
	if err == nil || errors.Is(err, resource.ErrNotFound) {
		t.Fatalf("Delete error = %v, want an error that is not ErrNotFound", err)
	}
	if pe := adaptertest.ProviderError(t, err); pe.Message != "no RabbitMQ management API at this URL; check RABBITMQ_API_URL" {
		t.Errorf("error %q does not say what to check", err)
	}
}

func TestNotFoundIsConfirmedOnce(t *testing.T) {
	t.Parallel()
	_, p := newFake(t,
		exchange{Method: "GET", Path: "/api/users/gone", Status: 404, JSON: notFoundJSON},
		whoami,
		// The API is known to exist now: no second check.
		exchange{Method: "GET", Path: "/api/users/gone", Status: 404, JSON: notFoundJSON},
	)
	for range 2 {
		if _, err := p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeUser, PhysicalID: "gone"}); !errors.Is(err, resource.ErrNotFound) {
			t.Fatalf("Read error = %v, want resource.ErrNotFound", err)
		}
	}
}

func TestBrokerDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := rabbitmq.New(rabbitmq.Config{URL: "http://" + addr, Username: testUser, Password: testPass,
		Retry: transport.Retry{Max: 1, WaitMin: time.Millisecond, WaitMax: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Read(t.Context(), resource.ReadRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "/"})
	want := "RabbitMQ at http://" + addr + " (RABBITMQ_API_URL) refused the connection: is it running, and is RABBITMQ_API_URL right? " +
		"(GET /api/vhosts/%2F, 2 attempts)"
	if err == nil || err.Error() != want || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Read error = %v, want %q wrapping ECONNREFUSED", err, want)
	}
}

func TestUnknownType(t *testing.T) {
	t.Parallel()
	_, p := newFake(t)
	_, err := p.Create(t.Context(), resource.CreateRequest{Type: "RabbitMQ::Broker::Stream"})
	if err == nil || !strings.Contains(err.Error(), `unknown resource type "RabbitMQ::Broker::Stream" (known: RabbitMQ::Broker::VirtualHost, `) {
		t.Errorf("Create error = %v, want unknown resource type", err)
	}
}

func TestBadPhysicalIDs(t *testing.T) {
	t.Parallel()
	_, p := newFake(t)
	tests := []struct {
		typ, id, want string
	}{
		{rabbitmq.TypeExchange, "orders", "is not <vhost>/<name>"},
		{rabbitmq.TypeExchange, "/orders", "is not <vhost>/<name>"},
		{rabbitmq.TypeQueue, "a/b/c", "is not <vhost>/<name>"},
		{rabbitmq.TypeQueue, "app/%zz", "is not <vhost>/<name>"},
		{rabbitmq.TypePolicy, "app/", "is not <vhost>/<name>"},
		{rabbitmq.TypePermission, "app", "is not <vhost>/<user>"},
		{rabbitmq.TypeBinding, "app/orders/queue/orders.created", "is not <vhost>/<source>/<queue|exchange>/<destination>/<propertiesKey>"},
		{rabbitmq.TypeBinding, "app/orders/topic/orders.created/~", "is not <vhost>/<source>/<queue|exchange>/<destination>/<propertiesKey>"},
	}
	for _, tt := range tests {
		_, err := p.Read(t.Context(), resource.ReadRequest{Type: tt.typ, PhysicalID: tt.id})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%s, %q) error = %v, want %q", tt.typ, tt.id, err, tt.want)
		}
	}
}

func TestNewFromEnv(t *testing.T) {
	t.Parallel()
	ok := map[string]string{"RABBITMQ_API_URL": "http://127.0.0.1:15672", "RABBITMQ_USERNAME": "u", "RABBITMQ_PASSWORD": "p"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for k, v := range ok {
			m[k] = v
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"nothing set", nil, "rabbitmq: set RABBITMQ_API_URL (the management API, e.g. http://127.0.0.1:15672), RABBITMQ_USERNAME, RABBITMQ_PASSWORD"},
		{"no password", with("RABBITMQ_PASSWORD", ""), "rabbitmq: set RABBITMQ_PASSWORD"},
		{"bad url", with("RABBITMQ_API_URL", "127.0.0.1:15672"), `rabbitmq: API URL "127.0.0.1:15672" is not an http(s) URL like http://127.0.0.1:15672; check RABBITMQ_API_URL`},
		{"credentials in url", with("RABBITMQ_API_URL", "http://admin:secret@127.0.0.1:15672"),
			"rabbitmq: API URL http://admin:xxxxx@127.0.0.1:15672 holds credentials; put them in RABBITMQ_USERNAME and RABBITMQ_PASSWORD instead"},
		{"bad limit", with("CDKX_CALL_TIMEOUT_RABBITMQ", "soon"), `rabbitmq: CDKX_CALL_TIMEOUT_RABBITMQ="soon" is not a positive duration like 30s or 10m`},
		{"ok", ok, ""},
		{"ok with /api/", with("RABBITMQ_API_URL", "https://mq.example.test/rabbitmq/api/"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := rabbitmq.NewFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("NewFromEnv error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || p.Info().Name != "rabbitmq" {
				t.Errorf("NewFromEnv = %v, %v, want a provider", p, err)
			}
		})
	}
}

func TestConfigURL(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "/", "/api", "/api/", "/prefix", "/prefix/api"} {
		path := "/api/vhosts/app"
		if strings.HasPrefix(suffix, "/prefix") {
			path = "/prefix" + path
		}
		f := startFake(t, exchange{Method: "DELETE", Path: path, Status: 204})
		p, err := rabbitmq.New(rabbitmq.Config{URL: f.URL + suffix, Username: testUser, Password: testPass})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Delete(t.Context(), resource.DeleteRequest{Type: rabbitmq.TypeVirtualHost, PhysicalID: "app"}); err != nil {
			t.Errorf("URL %q: Delete = %v", f.URL+suffix, err)
		}
	}
}

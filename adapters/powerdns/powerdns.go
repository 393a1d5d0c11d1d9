// Package powerdns is the cdkx provider "powerdns": DNS zones and record sets in PowerDNS Authoritative,
// through its HTTP API (https://doc.powerdns.com/authoritative/http-api/).
//
// Types:
//   - PowerDNS::DNS::Zone (see zone.go), a zone at /api/v1/servers/{server}/zones/{zoneId};
//   - PowerDNS::DNS::RecordSet (see recordset.go), one rrset of a zone, keyed by (name, type).
//
// Every request goes through adapters/transport: network errors, 429 and 5xx are retried, every 4xx is
// answered at once. API errors come back as *resource.ProviderError, decoded by status first because
// PowerDNS answers 401, 404 and 409 in text/plain and 400 and 422 in JSON ({"error": "…"}).
package powerdns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Name is the provider's name as written in templates.
const Name = "powerdns"

// Environment variables read by NewFromEnv.
const (
	EnvAPIURL   = "PDNS_API_URL"   // base URL of the PowerDNS web server, e.g. http://127.0.0.1:8081
	EnvAPIKey   = "PDNS_API_KEY"   // the server's api-key, sent as X-API-Key
	EnvServerID = "PDNS_SERVER_ID" // server id in API paths; default DefaultServerID
)

// DefaultServerID is the server id of a PowerDNS Authoritative server ("localhost" is the only one it has).
const DefaultServerID = "localhost"

// Config configures a Provider.
type Config struct {
	// URL is the base URL of the PowerDNS web server, e.g. http://127.0.0.1:8081; the adapter appends
	// /api/v1/servers/{ServerID}. A trailing "/" or "/api/v1" is accepted and dropped.
	URL string
	// APIKey is sent as the X-API-Key header of every request; it is never logged or shown in errors.
	APIKey string
	// ServerID is the server id in API paths; empty means DefaultServerID.
	ServerID string
	// HTTPClient sends each attempt; nil means a pooled client with sane timeouts.
	HTTPClient *http.Client
	// Retry is the retry policy; zero fields take the transport defaults (4 retries, 200ms..5s).
	Retry transport.Retry
	// Logger receives debug records of HTTP attempts and retries; nil logs nothing.
	// Limits bound each call (response body size, deadlines); zero fields take the transport's
	// defaults. NewFromEnv reads them from CDKX_MAX_BODY_<NAME> and the other transport.LimitsFromEnv
	// variables.
	Limits transport.Limits
	Logger *slog.Logger
}

// Provider serves PowerDNS::DNS::Zone and PowerDNS::DNS::RecordSet. It is safe for concurrent use.
// Constructing one sends no request, so a CLI can build it only when an assembly needs it.
type Provider struct {
	// Dispatch serves Create, Read, Update, Delete and Locate through types.
	kit.Dispatch[*Provider]
	base string // e.g. http://127.0.0.1:8081/api/v1/servers/localhost
	api  *transport.JSON
	// serverOK is set once GET /servers/{id} has answered 200, so that a 404 is known to be about the
	// object and not about a wrong URL or server id.
	serverOK atomic.Bool
}

// NewFromEnv builds a Provider from PDNS_API_URL, PDNS_API_KEY and PDNS_SERVER_ID (default "localhost"),
// read through getenv (os.Getenv in the CLI). A missing URL or key is an error naming the variable to set.
func NewFromEnv(getenv func(string) string) (*Provider, error) {
	var missing []string
	cfg := Config{URL: getenv(EnvAPIURL), APIKey: getenv(EnvAPIKey), ServerID: getenv(EnvServerID)}
	limits, err := transport.LimitsFromEnv(getenv, Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	cfg.Limits = limits
	if cfg.URL == "" {
		missing = append(missing, EnvAPIURL+" (the PowerDNS web server, e.g. http://127.0.0.1:8081)")
	}
	if cfg.APIKey == "" {
		missing = append(missing, EnvAPIKey+" (the api-key in pdns.conf)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("powerdns: set %s", strings.Join(missing, " and "))
	}
	return New(cfg)
}

// New builds a Provider from cfg. URL and APIKey are required; URL must be http or https.
func New(cfg Config) (*Provider, error) {
	if cfg.URL == "" {
		return nil, errors.New("powerdns: no API URL; set " + EnvAPIURL)
	}
	if cfg.APIKey == "" {
		return nil, errors.New("powerdns: no API key; set " + EnvAPIKey)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("powerdns: API URL %q is not an http(s) URL like http://127.0.0.1:8081; check %s", transport.RedactURL(cfg.URL), EnvAPIURL)
	}
	base := strings.TrimSuffix(strings.TrimRight(cfg.URL, "/"), "/api/v1")
	server := cfg.ServerID
	if server == "" {
		server = DefaultServerID
	}
	key := cfg.APIKey
	secrets := []string{key}
	if pass, ok := u.User.Password(); ok && pass != "" {
		// Credentials in PDNS_API_URL (for a proxy in front of PowerDNS) never reach an error or a log.
		secrets = append(secrets, pass)
	}
	p := &Provider{
		base: base + "/api/v1/servers/" + url.PathEscape(server),
		api: &transport.JSON{
			Client: transport.New(transport.Options{
				Provider:     Name,
				Service:      "PowerDNS",
				URLSetting:   EnvAPIURL,
				HTTPClient:   cfg.HTTPClient,
				Retry:        cfg.Retry,
				ErrorMessage: errorMessage,
				Logger:       cfg.Logger,
				Limits:       cfg.Limits,
				Secrets:      secrets,
			}),
			Auth:  func(req *http.Request) { req.Header.Set("X-API-Key", key) },
			Error: providerError,
		},
	}
	p.Dispatch = types.For(p)
	return p, nil
}

// Info declares the provider "powerdns", its types PowerDNS::DNS::Zone and PowerDNS::DNS::RecordSet, and
// that it can locate the object of an interrupted create (objects are named by their inputs). It is the
// same for a zero Provider, so the CLI can describe PowerDNS before it is configured.
func (p *Provider) Info() resource.ProviderInfo { return types.Info() }

// types lists the provider's types, in the order Info returns them; the Provider's Create, Read, Update,
// Delete and Locate go through it (kit.Dispatch).
//
// Create creates a zone (POST /zones) or a record set (PATCH /zones/{zoneId}, changetype REPLACE, after
// checking that the rrset does not exist yet). An object that exists already gives an error wrapping
// resource.ErrAlreadyExists: it is never adopted silently. Read returns the live properties and outputs
// of a zone or record set, or an error wrapping resource.ErrNotFound when it is gone. Update changes a
// zone (PUT /zones/{zoneId}) or a record set (PATCH, changetype REPLACE) in place. Delete deletes a zone
// (DELETE /zones/{zoneId}) or a record set (PATCH, changetype DELETE); an object already gone, or a
// record set whose zone is gone, is success.
//
// Locate returns the physical ID of the object that a create with req.Properties makes, when it exists at
// PowerDNS, or an error wrapping resource.ErrNotFound. PowerDNS names its objects by their inputs — a zone
// by its canonical name (PowerDNS lower-cases it), a record set by zone, name and type — so the engine can
// settle a create that was interrupted between the call and its record (crash recovery). It reads with
// GET /api/v1/servers/{server}/zones/{zone} (https://doc.powerdns.com/authoritative/http-api/zone.html).
var types = kit.New(resource.ProviderInfo{Name: Name, CanLocate: true},
	kit.Type[*Provider]{Schema: zoneSchema, ID: zoneID,
		Create: (*Provider).createZone, Read: (*Provider).readZone, Update: (*Provider).updateZone, Delete: (*Provider).deleteZone},
	kit.Type[*Provider]{Schema: recordSetSchema, ID: recordSetIDOf,
		Create: (*Provider).createRecordSet, Read: (*Provider).readRecordSet, Update: (*Provider).updateRecordSet, Delete: (*Provider).deleteRecordSet},
)

// zonePath is the URL of a zone, e.g. {base}/zones/example.test.
func (p *Provider) zonePath(zoneID string) string {
	return p.base + "/zones/" + url.PathEscape(zoneID)
}

// providerError decodes an error response into a *resource.ProviderError whose Kind is
// resource.ErrNotFound for 404 and resource.ErrAlreadyExists for 409.
func providerError(method, u string, resp *http.Response, body []byte) error {
	e := &resource.ProviderError{Provider: Name, Method: method, URL: u, Status: resp.StatusCode,
		Message: errorMessage(resp, body)}
	switch resp.StatusCode {
	case http.StatusNotFound:
		e.Kind = resource.ErrNotFound
	case http.StatusConflict:
		e.Kind = resource.ErrAlreadyExists
	}
	return e
}

// errorMessage is PowerDNS's error text, decoded by status first: 401, 404 and 409 are text/plain
// ("Unauthorized", "Not Found", "Conflict"); 400 and 422 are JSON {"error": "…"} (400 can be text/plain
// "Bad Request" too); anything else is read as JSON when labelled so, else as text of at most 512 bytes.
func errorMessage(resp *http.Response, body []byte) string {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return "Unauthorized: check " + EnvAPIKey
	case http.StatusNotFound, http.StatusConflict:
		return textMessage(resp, body)
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		if m, ok := jsonMessage(body); ok {
			return m
		}
		return textMessage(resp, body)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		if m, ok := jsonMessage(body); ok {
			return m
		}
	}
	return textMessage(resp, body)
}

func textMessage(resp *http.Response, body []byte) string {
	if m := transport.ErrorText(body); m != "" {
		return m
	}
	return http.StatusText(resp.StatusCode)
}

// jsonMessage decodes {"error": "…", "errors": ["…"]}.
func jsonMessage(body []byte) (string, bool) {
	var e struct {
		Error  string   `json:"error"`
		Errors []string `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return "", false
	}
	m := e.Error
	if len(e.Errors) > 0 {
		m += ": " + strings.Join(e.Errors, "; ")
	}
	return transport.ErrorText([]byte(m)), true
}

// confirmNotFound is called with a 404 that would mean "the object is gone". It makes sure the 404 is
// not about the server (a wrong PDNS_SERVER_ID or PDNS_API_URL path), which would otherwise make cdkx
// believe that every object had been deleted. It returns nil when the server exists.
func (p *Provider) confirmNotFound(ctx context.Context) error {
	if p.serverOK.Load() {
		return nil
	}
	_, err := p.api.Call(ctx, http.MethodGet, p.base, nil, nil)
	if err == nil {
		p.serverOK.Store(true)
		return nil
	}
	var pe *resource.ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		pe.Kind = nil
		pe.Message = "no PowerDNS server at this URL; check " + EnvAPIURL + " and " + EnvServerID
	}
	return err
}

// Preflight checks the API key by one authenticated read, GET /api/v1/servers/{server} (once per
// Provider: confirmNotFound remembers the answer): a 401 or 403 is a *resource.CredentialsError naming
// PDNS_API_KEY, a 404 says to check PDNS_API_URL and PDNS_SERVER_ID. PowerDNS has nothing more to check
// before a run.
func (p *Provider) Preflight(ctx context.Context, _ resource.PreflightRequest) ([]resource.PreflightProblem, error) {
	err := p.confirmNotFound(ctx)
	var pe *resource.ProviderError
	if errors.As(err, &pe) && (pe.Status == http.StatusUnauthorized || pe.Status == http.StatusForbidden) {
		return nil, &resource.CredentialsError{Provider: Name, Variables: EnvAPIKey, Err: err}
	}
	return nil, err
}

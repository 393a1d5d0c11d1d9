// Package hcloud is the cdkx provider "hetzner": networks, servers, load balancers, firewalls, volumes,
// IPs, SSH keys, certificates and placement groups of Hetzner Cloud, through its public API
// (https://docs.hetzner.cloud/, base URL https://api.hetzner.cloud/v1).
//
// The types, their properties and outputs are those of the TypeScript cdkx Hetzner provider, so that its
// assemblies deploy unchanged; each type is in a file of its own (network.go, server.go, …) and its
// schema documents its API calls. Outputs carry every key of that provider's state objects, and "crn".
//
// What the adapter does right where the TypeScript runtime did not:
//   - Every read, update and delete goes by the stored physical ID, never by name.
//   - Actions (https://docs.hetzner.cloud/#actions) are awaited by polling GET /actions/{id}, predicted
//     from their progress and backing off from PollOptions.Interval (100 ms) to 50 × it, up to
//     PollOptions.Timeout (10 min); an action that ends in error fails the step with its code and message.
//   - Requests are retried on 409 conflict, 423 locked, 429 (waiting as RateLimit-Reset says), 5xx and
//     network errors, never on another 4xx (CheckRetry). A create's 409 uniqueness_error says to import
//     the object or rename it; an existing object is never adopted silently.
//   - The rate limit is respected before it bites: a pacer mirrors the project's request budget from the
//     RateLimit-* headers and slows requests down to the refill rate when it runs low.
//   - Changes that Hetzner accepts one at a time per network, load balancer, server, IP or volume are
//     declared as resource.SerialKey, and the engine runs them one after another.
//   - Create-only properties replace the object; types whose names are unique per project delete the old
//     object first when the replacement keeps its name (resource.Schema.DeleteBeforeReplace, Identity).
//     A server's serverType is not create-only: a change resizes the server in place (power off,
//     change_type keeping the disk's size, power on), as Hetzner's Console and Terraform do. Schemas name
//     the harm of a replacement or change (ReplaceNote, UpdateNote) for plans to show.
//   - Every type reads its object back (refresh, drift) and locates the object of an interrupted create
//     by name (or by its parent and key), so crash recovery never duplicates a server.
//   - Secrets (a certificate's privateKey, a server's root_password) are never stored or shown.
//
// Configuration, as Hetzner's own CLI: HCLOUD_TOKEN (required) and HCLOUD_ENDPOINT (default
// https://api.hetzner.cloud/v1); HCLOUD_POLL_INTERVAL and HCLOUD_ACTION_TIMEOUT tune the action wait.
package hcloud

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/internal/kit"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// Name is the provider's name as written in templates.
const Name = "hetzner"

// DefaultConcurrency is how many calls cdkx has in flight at once against one Hetzner project unless the
// user sets a limit: most calls wait for an action, so many can run at once, and the pacer keeps the
// request rate within the project's budget.
const DefaultConcurrency = 50

// DefaultEndpoint is Hetzner Cloud's API base URL.
const DefaultEndpoint = "https://api.hetzner.cloud/v1"

// Environment variables read by NewFromEnv (the names Hetzner's CLI uses, plus two for the action wait).
const (
	EnvToken         = "HCLOUD_TOKEN"          // API token of the project; never logged or shown
	EnvEndpoint      = "HCLOUD_ENDPOINT"       // base URL including /v1; default DefaultEndpoint
	EnvPollInterval  = "HCLOUD_POLL_INTERVAL"  // first wait between polls of an action, e.g. 100ms
	EnvActionTimeout = "HCLOUD_ACTION_TIMEOUT" // longest wait for one action, e.g. 10m
)

// Config configures a Provider.
type Config struct {
	// Token is the project's API token, sent as "Authorization: Bearer …"; required.
	Token string
	// Endpoint is the API base URL including /v1; "" means DefaultEndpoint.
	Endpoint string
	// Poll says how actions are awaited.
	Poll PollOptions
	// HTTPClient sends each attempt; nil means a pooled client with sane timeouts.
	HTTPClient *http.Client
	// Retry is the retry policy; zero fields take the transport defaults but Max (8 retries). A nil
	// Retry.Check means CheckRetry.
	Retry transport.Retry
	// Logger receives debug records of HTTP attempts and retries; nil logs nothing.
	// Limits bound each call (response body size, deadlines); zero fields take the transport's
	// defaults. NewFromEnv reads them from CDKX_MAX_BODY_<NAME> and the other transport.LimitsFromEnv
	// variables.
	Limits transport.Limits
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Provider serves the Hetzner types. It is safe for concurrent use; constructing one sends no request.
type Provider struct {
	// Dispatch serves Create, Read, Update, Delete and Locate through types.
	kit.Dispatch[*Provider]
	c     *client
	pacer *pacer
	// credentialsOK is set once Preflight's read was answered: the token is checked once per Provider.
	credentialsOK atomic.Bool
}

// NewFromEnv builds a Provider from HCLOUD_TOKEN, HCLOUD_ENDPOINT, HCLOUD_POLL_INTERVAL and
// HCLOUD_ACTION_TIMEOUT, read through getenv (os.Getenv in the CLI).
func NewFromEnv(getenv func(string) string) (*Provider, error) {
	cfg := Config{Token: getenv(EnvToken), Endpoint: getenv(EnvEndpoint)}
	limits, err := transport.LimitsFromEnv(getenv, Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	cfg.Limits = limits
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{EnvPollInterval, &cfg.Poll.Interval}, {EnvActionTimeout, &cfg.Poll.Timeout}} {
		if v := getenv(d.env); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return nil, fmt.Errorf("%s: %s=%q is not a positive duration like 100ms or 10m", Name, d.env, v)
			}
			*d.to = dur
		}
	}
	return New(cfg)
}

// New builds a Provider from cfg. Token is required; Endpoint must be an http(s) URL without credentials.
func New(cfg Config) (*Provider, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("%s: no API token; set %s (Hetzner Console → project → Security → API tokens)", Name, EnvToken)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("%s: %s=%q is not an http(s) base URL like %s", Name, EnvEndpoint, transport.RedactURL(endpoint), DefaultEndpoint)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	retry := cfg.Retry
	if retry.Check == nil {
		retry.Check = CheckRetry
	}
	if retry.Max == 0 {
		retry.Max = 8
	}
	retry.After = retryAfter
	p := &Provider{}
	token := cfg.Token
	p.c = &client{
		base: strings.TrimRight(endpoint, "/"),
		poll: cfg.Poll,
		now:  now,
		api: &transport.JSON{
			Client: transport.New(transport.Options{
				Provider:     Name,
				Service:      "Hetzner Cloud",
				URLSetting:   EnvEndpoint,
				HTTPClient:   cfg.HTTPClient,
				Retry:        retry,
				ErrorMessage: errorMessage,
				Logger:       cfg.Logger,
				Limits:       cfg.Limits,
				Secrets:      []string{token},
				Wrap: func(rt http.RoundTripper) http.RoundTripper {
					p.pacer = newPacer(rt, now)
					return p.pacer
				},
			}),
			Auth:  func(req *http.Request) { req.Header.Set("Authorization", "Bearer "+token) },
			Error: providerError,
		},
	}
	p.Dispatch = types.For(p)
	return p, nil
}

// types lists the provider's types, sorted by name as Info returns them; each is in a file of its own.
// The Provider's Create, Read, Update, Delete and Locate go through it (kit.Dispatch): Create, Update and
// Delete wait for the actions they start; Read returns an object's live properties (in the shape of the
// inputs) and outputs by its physical ID, or an error wrapping resource.ErrNotFound when it is gone;
// Update of a type whose properties are all create-only is an error naming them; Delete of an object
// already gone is success; Locate returns the physical ID of the object a create with req.Properties
// made, found by its name (or by its parent and key), or an error wrapping resource.ErrNotFound.
var types = kit.New(resource.ProviderInfo{Name: Name, DefaultConcurrency: DefaultConcurrency, CanLocate: true},
	loadBalancerKind(),
	loadBalancerServiceKind(),
	loadBalancerTargetKind(),
	networkAttachmentKind(),
	placementGroupKind(),
	serverKind(),
	floatingIPKind(),
	floatingIPAssignmentKind(),
	networkKind(),
	primaryIPKind(),
	primaryIPAssignmentKind(),
	routeKind(),
	subnetKind(),
	certificateKind(),
	firewallKind(),
	firewallAttachmentKind(),
	firewallRulesKind(),
	sshKeyKind(),
	volumeKind(),
	volumeAttachmentKind(),
)

// hetzner completes the check of a type's schema with the rules every Hetzner type shares: the
// properties named in ids hold Hetzner IDs (JSON integers, integer strings accepted: "42"), and labels
// are Hetzner labels.
func hetzner(k kit.Type[*Provider], ids ...string) kit.Type[*Provider] {
	check := k.Schema.Check
	k.Schema.Check = func(props resource.Properties, unknown resource.IsUnknownFunc) []resource.FieldError {
		errs := checkIDs(props, unknown, ids)
		errs = append(errs, checkLabels(props, unknown)...)
		if check != nil {
			errs = append(errs, check(props, unknown)...)
		}
		return errs
	}
	return k
}

// Info declares the provider "hetzner", its types (sorted by name), DefaultConcurrency and that it can
// locate the object of an interrupted create. It is the same for a zero Provider.
func (p *Provider) Info() resource.ProviderInfo { return types.Info() }

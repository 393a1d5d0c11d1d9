// Command pdns measures the PowerDNS adapter against a bare net/http client on a real PowerDNS, and prints
// a table.
//
// Each run creates N record sets (type A, one record each) in a zone of its own, with C requests in
// flight, once per client:
//   - bare: a net/http client that sends exactly the requests the adapter sends for a create
//     (GET /zones/{zone}?rrset_name=…&rrset_type=A, then PATCH /zones/{zone} with changetype REPLACE),
//     reading each response body and checking its status but decoding nothing;
//   - adapter: powerdns.Provider.Create, as the engine calls it (properties decoded, the zone's answer
//     decoded, the PATCH encoded, the retrying transport);
//   - transport.JSON: the same two requests as bare through the adapters' JSON client alone, which
//     tells the transport's cost from the adapter's own.
//
// Each run rotates which client goes first. Only the N creates are timed: the zone is created before and
// deleted after, with the bare client.
//
// The bare client's http.Transport keeps up to C idle connections to the server. PowerDNS 4.7 answers
// every request with "Connection: close", though, so every client opens a connection per request
// (conns/run), whatever its pool. With -defaultpool, one more row shows a bare client on net/http's
// default pool (2 idle connections per host).
//
// The table gives, per client, the median, fastest and slowest wall time of the runs, the median time
// and the median CPU time of this process (user + system, getrusage) per record set, the connections
// opened per run (the median; from net/http/httptrace, so for every client alike), the ratio of the
// median to the bare client's, and "paired", the median of each run's own ratio to the bare client's
// run, which cancels some of the drift of a shared machine.
//
// Usage: go run ./bench/pdns [-url http://127.0.0.1:8081] [-key KEY] [-n 1000] [-c 10] [-runs 5]
// [-defaultpool] [-cpuprofile FILE]; -url and -key default to PDNS_API_URL and PDNS_API_KEY. Start a
// private PowerDNS with scripts/pdns-up.sh DIR and stop it with scripts/pdns-down.sh DIR.
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/powerdns"
	"github.com/cdkx-dev/cdkx/adapters/transport"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

func main() {
	cfg := config{}
	flag.StringVar(&cfg.url, "url", os.Getenv("PDNS_API_URL"), "PowerDNS web server base URL (default $PDNS_API_URL)")
	flag.StringVar(&cfg.key, "key", os.Getenv("PDNS_API_KEY"), "PowerDNS API key (default $PDNS_API_KEY)")
	flag.IntVar(&cfg.n, "n", 1000, "record sets per run")
	flag.IntVar(&cfg.c, "c", 10, "requests in flight")
	flag.IntVar(&cfg.runs, "runs", 5, "runs per client; the table shows the median")
	flag.BoolVar(&cfg.defaultPool, "defaultpool", false, "also measure a bare client on net/http's default transport (2 idle connections per host)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile to this file; samples carry the label client=<name>")
	flag.Parse()
	if err := profiled(cfg.cpuProfile, func() error { return run(context.Background(), cfg) }); err != nil {
		fmt.Fprintln(os.Stderr, "bench/pdns:", err)
		os.Exit(1)
	}
}

// profiled runs f, with a CPU profile written to file unless file is "".
func profiled(file string, f func() error) error {
	if file == "" {
		return f()
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return f()
}

type config struct {
	url, key    string
	n, c, runs  int
	defaultPool bool
	cpuProfile  string
}

// client is one way of creating record sets.
type client struct {
	name string
	// create makes record set i of zone.
	create func(ctx context.Context, zone string, i int) error
	// reset starts a run with a fresh connection pool.
	reset func() error
}

// result is one client's measurements over the runs.
type result struct {
	walls []time.Duration
	cpu   []time.Duration // the process's CPU time (user + system) during each run
	conns []int
}

func run(ctx context.Context, cfg config) error {
	if cfg.url == "" || cfg.key == "" {
		return errors.New("set -url and -key (or PDNS_API_URL and PDNS_API_KEY); start PowerDNS with scripts/pdns-up.sh DIR")
	}
	if cfg.n < 1 || cfg.c < 1 || cfg.runs < 1 {
		return errors.New("-n, -c and -runs must be at least 1")
	}
	base := strings.TrimSuffix(strings.TrimRight(cfg.url, "/"), "/api/v1") + "/api/v1/servers/localhost"
	b := &bare{base: base, key: cfg.key}
	admin := &bare{base: base, key: cfg.key, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}

	clients := []client{
		{name: fmt.Sprintf("bare net/http (%d idle conns/host)", cfg.c), create: b.createRecordSet, reset: func() error {
			b.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.c}}
			return nil
		}},
		adapterClient(cfg),
		jsonClient(cfg, base),
	}
	if cfg.defaultPool {
		d := &bare{base: base, key: cfg.key}
		clients = append(clients, client{name: "bare net/http (default: 2 idle conns/host)", create: d.createRecordSet, reset: func() error {
			d.hc = &http.Client{Transport: &http.Transport{}}
			return nil
		}})
	}

	tag := make([]byte, 4)
	_, _ = rand.Read(tag)
	results := make([]result, len(clients))
	for r := range cfg.runs {
		for k := range clients {
			// Rotate the order, so that no client always runs on a warmer (or fuller) server.
			j := (k + r) % len(clients)
			zone := fmt.Sprintf("bench-%s-r%d-c%d.test.", hex.EncodeToString(tag), r, j)
			m, err := measure(ctx, cfg, admin, clients[j], zone)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", r+1, clients[j].name, err)
			}
			results[j].walls = append(results[j].walls, m.wall)
			results[j].cpu = append(results[j].cpu, m.cpu)
			results[j].conns = append(results[j].conns, m.conns)
			fmt.Fprintf(os.Stderr, "run %d/%d  %-45s %8s  cpu %8s  %4d conns\n", r+1, cfg.runs, clients[j].name,
				m.wall.Round(time.Millisecond), m.cpu.Round(time.Millisecond), m.conns)
		}
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "record sets\tin flight\tclient\truns\tmedian\tmin\tmax\tper record set\tCPU/record set\tconns/run\tratio\tpaired\t\n")
	bare := results[0]
	for k, c := range clients {
		m := median(results[k].walls)
		// paired is the median of the runs' own ratios: each run's clients ran back to back.
		ratios := make([]float64, cfg.runs)
		for r := range ratios {
			ratios[r] = float64(results[k].walls[r]) / float64(bare.walls[r])
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%.3f×\t%.3f×\t\n", cfg.n, cfg.c, c.name, cfg.runs,
			m.Round(time.Millisecond), slices.Min(results[k].walls).Round(time.Millisecond), slices.Max(results[k].walls).Round(time.Millisecond),
			(m / time.Duration(cfg.n)).Round(time.Microsecond), (median(results[k].cpu) / time.Duration(cfg.n)).Round(time.Microsecond),
			median(results[k].conns), float64(m)/float64(median(bare.walls)), median(ratios))
	}
	return tw.Flush()
}

// measurement is one run of one client.
type measurement struct {
	wall, cpu time.Duration
	conns     int // connections opened
}

// measure creates zone, times the N creates of c in it, checks that they are all there and deletes the
// zone.
func measure(ctx context.Context, cfg config, admin *bare, c client, zone string) (measurement, error) {
	if err := admin.createZone(ctx, zone); err != nil {
		return measurement{}, err
	}
	defer func() {
		if err := admin.deleteZone(context.WithoutCancel(ctx), zone); err != nil {
			fmt.Fprintf(os.Stderr, "bench/pdns: delete zone %s: %v\n", zone, err)
		}
	}()
	if err := c.reset(); err != nil {
		return measurement{}, err
	}
	var conns atomic.Int64
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				conns.Add(1)
			}
		},
	})
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	runtime.GC()
	cpu0 := cpuTime()
	start := time.Now()
	for range cfg.c {
		wg.Go(func() {
			pprof.SetGoroutineLabels(pprof.WithLabels(tctx, pprof.Labels("client", c.name)))
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.n {
					return
				}
				if err := c.create(tctx, zone, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("record set %d: %w", i, err)
					}
					mu.Unlock()
					next.Store(int64(cfg.n))
					return
				}
			}
		})
	}
	wg.Wait()
	m := measurement{wall: time.Since(start), cpu: cpuTime() - cpu0, conns: int(conns.Load())}
	if firstErr != nil {
		return m, firstErr
	}
	if got, err := admin.countA(ctx, zone); err != nil {
		return m, err
	} else if got != cfg.n {
		return m, fmt.Errorf("zone %s holds %d A record sets after the run, want %d", zone, got, cfg.n)
	}
	return m, nil
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func adapterClient(cfg config) client {
	var p *powerdns.Provider
	return client{
		name: "adapter (powerdns.Provider.Create)",
		reset: func() error {
			var err error
			p, err = powerdns.New(powerdns.Config{URL: cfg.url, APIKey: cfg.key})
			return err
		},
		create: func(ctx context.Context, zone string, i int) error {
			_, err := p.Create(ctx, resource.CreateRequest{Type: powerdns.TypeRecordSet, LogicalID: fmt.Sprintf("R%d", i),
				Properties: resource.Properties{
					"zoneId":  zone,
					"name":    recordName(zone, i),
					"type":    "A",
					"ttl":     json.Number("300"),
					"records": []any{recordContent(i)},
				}})
			return err
		},
	}
}

func recordName(zone string, i int) string { return "r" + strconv.Itoa(i) + "." + zone }

func recordContent(i int) string {
	return fmt.Sprintf("192.0.%d.%d", 2+i/250, 1+i%250)
}

// jsonClient sends bare's requests through transport.JSON.
func jsonClient(cfg config, base string) client {
	var c *transport.JSON
	return client{
		name: "transport.JSON (same requests as bare)",
		reset: func() error {
			c = &transport.JSON{Client: transport.New(transport.Options{Provider: powerdns.Name}),
				Auth: func(r *http.Request) { r.Header.Set("X-API-Key", cfg.key) }}
			return nil
		},
		create: func(ctx context.Context, zone string, i int) error {
			name := recordName(zone, i)
			zu := base + "/zones/" + url.PathEscape(zone)
			q := url.Values{"rrset_name": {name}, "rrset_type": {"A"}}
			var z struct {
				RRSets []rrset `json:"rrsets"`
			}
			if _, err := c.Call(ctx, http.MethodGet, zu+"?"+q.Encode(), nil, &z); err != nil {
				return err
			}
			_, err := c.Call(ctx, http.MethodPatch, zu, patchOf(name, i), nil)
			return err
		},
	}
}

// bare is a PowerDNS client on plain net/http.
type bare struct {
	base, key string
	hc        *http.Client
}

type rrset struct {
	Name       string   `json:"name"`
	Type       string   `json:"type"`
	TTL        int      `json:"ttl"`
	ChangeType string   `json:"changetype"`
	Records    []record `json:"records"`
}

type record struct {
	Content  string `json:"content"`
	Disabled bool   `json:"disabled"`
}

// createRecordSet sends the adapter's two requests for a create: the existence check, then the PATCH.
func (b *bare) createRecordSet(ctx context.Context, zone string, i int) error {
	name := recordName(zone, i)
	q := url.Values{"rrset_name": {name}, "rrset_type": {"A"}}
	if err := b.do(ctx, http.MethodGet, b.zoneURL(zone)+"?"+q.Encode(), nil, http.StatusOK, nil); err != nil {
		return err
	}
	return b.do(ctx, http.MethodPatch, b.zoneURL(zone), patchOf(name, i), http.StatusNoContent, nil)
}

// patchOf is the PATCH body that creates record set i, named name.
func patchOf(name string, i int) map[string][]rrset {
	return map[string][]rrset{"rrsets": {{Name: name, Type: "A", TTL: 300, ChangeType: "REPLACE",
		Records: []record{{Content: recordContent(i)}}}}}
}

func (b *bare) createZone(ctx context.Context, zone string) error {
	in := map[string]any{"name": zone, "kind": "Native", "nameservers": []string{}}
	return b.do(ctx, http.MethodPost, b.base+"/zones", in, http.StatusCreated, nil)
}

func (b *bare) deleteZone(ctx context.Context, zone string) error {
	return b.do(ctx, http.MethodDelete, b.zoneURL(zone), nil, http.StatusNoContent, nil)
}

// countA counts the A record sets of zone.
func (b *bare) countA(ctx context.Context, zone string) (int, error) {
	var z struct {
		RRSets []struct {
			Type string `json:"type"`
		} `json:"rrsets"`
	}
	if err := b.do(ctx, http.MethodGet, b.zoneURL(zone), nil, http.StatusOK, &z); err != nil {
		return 0, err
	}
	n := 0
	for _, rr := range z.RRSets {
		if rr.Type == "A" {
			n++
		}
	}
	return n, nil
}

func (b *bare) zoneURL(zone string) string { return b.base + "/zones/" + url.PathEscape(zone) }

// do sends one request and wants status; out, when not nil, receives the decoded response.
func (b *bare) do(ctx context.Context, method, u string, in any, status int, out any) error {
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", b.key)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %d %s, want %d", method, u, resp.StatusCode, bytes.TrimSpace(msg), status)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// median is the middle value of xs (the upper one of the two middle values when len(xs) is even).
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

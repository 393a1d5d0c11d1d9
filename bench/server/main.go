// Command server measures `cdkx server`, the state service, and prints a table.
//
// It starts two in-process replicas of the service (two http.Servers on 127.0.0.1:0, each with its own
// pgx pool from server.Open) on one fresh schema of the given database, creates an API token, and for
// each concurrency level C runs C concurrent deploys, each on its own stack: create update, start, then a
// loop of checkpointverbatim (a deployment of -resources resources of which one changes each time, with
// increasing sequenceNumber), checkpointdelta (a one-resource edit, when GET /api/capabilities offers
// delta-checkpoint-uploads-v2), the cdkx extension's commit (the same edit against an explicit base
// version: what the cdkx CLI sends per step) in turn, and events/batch requests, bounded by -checkpoints checkpoint requests per
// deploy and by -duration per level, then complete. Every deploy alternates its requests between the two
// replicas. The table gives, per level and request kind, requests, requests/second (requests of that kind
// over the level's wall time, stack creation included) and p50/p99 latency as the client saw it; the
// "all" row is every timed request of the level.
//
// Storage: a deploy of N resources that checkpoints once per resource with delta edits (one verbatim
// checkpoint of the empty deployment, then N deltas each adding one resource), over HTTP; then the
// bytes of its checkpoint rows (sum of octet_length(data) and of pg_column_size(data), i.e. after TOAST
// compression) and the growth of pg_total_relation_size('svc_checkpoints').
//
// cdkx over HTTP: the real `cdkx deploy` binary (a subprocess) deploys N Cdkx::Core::Data resources (in
// chains of depth 10, concurrency 10) with --state pointing at the first replica; the table gives the
// wall time, the requests and request-body bytes the CLI sent, the checkpoints (commits) stored, and the
// bytes stored for the stack's checkpoints, which must grow linearly with N.
//
// -think D makes every deploy wait about D (uniformly from D/2 to 3D/2) before each checkpoint request (the time a real update spends in
// its providers between two steps), so that the table shows the server's latency at a given number of
// concurrent updates rather than at saturation (with -think 0, the default, every deploy sends its next
// request as soon as the last one is answered: latency is then concurrency over throughput).
// -cpuprofile FILE writes a CPU profile of the whole run (client and replicas; PostgreSQL runs apart).
//
// -abuse D runs the abuse loads of abuse.go instead (large, slow and idle clients against the cdkx server
// binary, D each) and prints the server's peak RSS and a healthy client's latency under each.
//
// Usage: go run ./bench/server -database-url postgres://… [-updates 1,10,50] [-checkpoints 60]
// [-duration 20s] [-resources 50] [-sizes 100,1000] [-think 0] [-cpuprofile FILE]
// [-abuse 10s -abuse-clients 8 -abuse-slow 200 -abuse-idle 1000 -abuse-server-args '…']
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdkx-dev/cdkx/internal/server"
)

func main() {
	dbURL := flag.String("database-url", os.Getenv("CDKX_TEST_POSTGRES_URL"), "PostgreSQL database to benchmark on (a fresh schema is created and dropped)")
	levels := flag.String("updates", "1,10,50", "concurrency levels: concurrent deploys, each on its own stack")
	checkpoints := flag.Int("checkpoints", 60, "checkpoint requests (verbatim and delta) per deploy")
	duration := flag.Duration("duration", 20*time.Second, "time bound of each concurrency level")
	resources := flag.Int("resources", 50, "resources in the throughput deploys' deployment")
	sizes := flag.String("sizes", "100,1000", "resource counts of the storage deploys (one delta checkpoint per resource) and of the cdkx deploys over HTTP")
	flag.DurationVar(&think, "think", 0, "time each deploy waits before each checkpoint request (0: none, closed loop)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.StringVar(&cdkxBin, "cdkx", "", "cdkx binary for the deploys over HTTP (default: go build ./cmd/cdkx; \"none\" skips them)")
	abuseDur := flag.Duration("abuse", 0, "run the abuse loads against the cdkx server binary instead, each for this long (see abuse.go)")
	abuseClients := flag.Int("abuse-clients", 8, "clients of the large-body loads (-abuse)")
	abuseSlow := flag.Int("abuse-slow", 200, "connections of the slow-body load (-abuse)")
	abuseIdle := flag.Int("abuse-idle", 1000, "connections of the idle load (-abuse)")
	abuseArgs := flag.String("abuse-server-args", "", "arguments added to the cdkx server command line (-abuse), separated by spaces")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/server:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench/server:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	switch cdkxBin {
	case "":
		bin, err := buildCdkx()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/server:", err)
			os.Exit(1)
		}
		cdkxBin = bin
	case "none":
		cdkxBin = ""
	}
	if *abuseDur > 0 {
		if cdkxBin == "" {
			fmt.Fprintln(os.Stderr, "bench/server: -abuse needs the cdkx binary")
			os.Exit(1)
		}
		if err := abuse(*dbURL, cdkxBin, *abuseDur, *abuseClients, *abuseSlow, *abuseIdle, strings.Fields(*abuseArgs)); err != nil {
			fmt.Fprintln(os.Stderr, "bench/server:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*dbURL, *levels, *checkpoints, *duration, *resources, *sizes); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want positive numbers separated by commas", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// replica is one in-process instance of the service.
type replica struct {
	srv  *server.Server
	http *http.Server
	url  string
	// requests and bodyBytes count what clients sent (request bodies as sent, gzip included).
	requests, bodyBytes atomic.Int64
}

func startReplica(ctx context.Context, dbURL string) (*replica, error) {
	srv, err := server.Open(ctx, dbURL, server.Options{})
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	r := &replica{srv: srv, url: "http://" + ln.Addr().String()}
	h := srv.Handler()
	r.http = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if req.ContentLength > 0 {
			r.bodyBytes.Add(req.ContentLength)
		}
		h.ServeHTTP(w, req)
	})}
	go func() { _ = r.http.Serve(ln) }()
	return r, nil
}

func (r *replica) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.http.Shutdown(ctx)
	r.srv.Close()
}

// freshSchema creates a schema of its own on dbURL and returns the URL that opens it and a function that
// drops it.
func freshSchema(ctx context.Context, dbURL string) (string, func(), error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("-database-url: %w", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "cdkx_svc_bench_" + hex.EncodeToString(rnd[:])
	// Through pgxpool.ParseConfig, so that the URL may carry pool settings (pool_max_conns=…).
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("-database-url: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, pcfg.ConnConfig.Copy())
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, err
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, pcfg.ConnConfig.Copy())
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/server: drop schema:", err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "bench/server: drop schema:", err)
		}
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

func run(dbURL, levelList string, checkpoints int, duration time.Duration, resources int, sizeList string) error {
	if dbURL == "" {
		return errors.New("pass -database-url postgres://… (or set CDKX_TEST_POSTGRES_URL)")
	}
	levels, err := parseInts(levelList)
	if err != nil {
		return fmt.Errorf("-updates %w", err)
	}
	sizes, err := parseInts(sizeList)
	if err != nil {
		return fmt.Errorf("-sizes %w", err)
	}
	// A hard bound on the whole run, whatever happens.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(levels))*(duration+time.Minute)+10*time.Minute)
	defer cancel()
	schemaURL, drop, err := freshSchema(ctx, dbURL)
	if err != nil {
		return err
	}
	defer drop()
	pcfg, err := pgxpool.ParseConfig(schemaURL)
	if err != nil {
		return err
	}
	var reps []*replica
	for range 2 {
		r, err := startReplica(ctx, schemaURL)
		if err != nil {
			return err
		}
		defer r.stop()
		reps = append(reps, r)
	}
	tok, err := reps[0].srv.CreateToken(ctx, "bench")
	if err != nil {
		return err
	}
	c := &client{
		http:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}, Timeout: time.Minute},
		urls:  []string{reps[0].url, reps[1].url},
		token: "token " + tok,
	}
	delta, err := c.offersDelta(ctx)
	if err != nil {
		return err
	}
	conns := pcfg.MaxConns // what server.Open makes of the URL
	if !strings.Contains(dbURL, "pool_max_conns") {
		conns = max(conns, server.DefaultPoolConns)
	}
	fmt.Printf("cdkx server: 2 replicas (pgx pool max %d conns each), %d resources per deployment, %d checkpoint requests per deploy (bound %s per level), think time %s, delta offered: %v\n\n",
		conns, resources, checkpoints, duration, think, delta)

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "updates\tkind\trequests\treq/s\tp50\tp99\terrors\t")
	for _, n := range levels {
		res, wall, err := c.level(ctx, n, checkpoints, duration, resources, delta)
		if err != nil {
			return err
		}
		all := &latencies{}
		for _, kind := range kinds {
			all.d = append(all.d, res[kind].d...)
			all.errors += res[kind].errors
		}
		res[kindAll] = all
		for _, kind := range append(kinds, kindAll) {
			lat := res[kind]
			if len(lat.d) == 0 && lat.errors == 0 {
				continue
			}
			p50, p99 := percentile(lat.d, 50), percentile(lat.d, 99)
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%s\t%s\t%d\t\n", n, kind, len(lat.d), float64(len(lat.d))/wall.Seconds(),
				fmtDur(p50), fmtDur(p99), lat.errors)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !delta {
		return nil
	}

	fmt.Println()
	db, err := pgxpool.New(ctx, schemaURL)
	if err != nil {
		return err
	}
	defer db.Close()
	tw = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resources\tcheckpoints\twall\tfinal state\tstored (octet_length)\tstored (pg_column_size)\ttable growth\tstored/resource\t")
	for _, n := range sizes {
		var before int64
		if err := db.QueryRow(ctx, `SELECT pg_total_relation_size('svc_checkpoints')`).Scan(&before); err != nil {
			return err
		}
		stack := fmt.Sprintf("size-%d", n)
		start := time.Now()
		final, err := c.storageDeploy(ctx, stack, n)
		if err != nil {
			return fmt.Errorf("storage deploy of %d resources: %w", n, err)
		}
		wall := time.Since(start)
		var rows, raw, stored, after int64
		if err := db.QueryRow(ctx, `SELECT count(*), coalesce(sum(coalesce(octet_length(c.data), 0) + coalesce(octet_length(c.delta), 0)), 0),
 coalesce(sum(coalesce(pg_column_size(c.data), 0) + coalesce(pg_column_size(c.delta), 0)), 0),
 pg_total_relation_size('svc_checkpoints')
FROM svc_checkpoints c JOIN svc_stacks s ON s.id = c.stack_id WHERE s.name = $1`, stack).Scan(&rows, &raw, &stored, &after); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, rows, wall.Round(time.Millisecond), mb(int64(final)), mb(raw), mb(stored), mb(after-before),
			fmt.Sprintf("%d B", raw/int64(n)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cdkxBin == "" {
		return nil
	}
	fmt.Println()
	return cliDeploys(ctx, db, reps, tok, cdkxBin, sizes)
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Microsecond).String()
	}
}

// Request kinds of the table.
const (
	kindCreate   = "create"
	kindStart    = "start"
	kindVerbatim = "verbatim"
	kindDelta    = "delta"
	// kindCommit is the cdkx extension's PATCH …/commit: a delta against an explicit base version.
	kindCommit   = "cdkx commit"
	kindEvents   = "events/batch"
	kindComplete = "complete"
	kindAll      = "all"
)

var kinds = []string{kindVerbatim, kindDelta, kindCommit, kindEvents, kindCreate, kindStart, kindComplete}

// latencies of one request kind.
type latencies struct {
	d      []time.Duration
	errors int
}

func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100 // nearest rank
	return s[max(i, 1)-1]
}

// client talks to the replicas.
type client struct {
	http  *http.Client
	urls  []string
	token string
}

// do sends one request to replica r and returns the status and body.
func (c *client) do(ctx context.Context, r int, method, path, auth string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.urls[r%len(c.urls)]+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/vnd.pulumi+9")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// must sends a request and fails unless it answers 2xx.
func (c *client) must(ctx context.Context, r int, method, path, auth string, body []byte) ([]byte, error) {
	code, data, err := c.do(ctx, r, method, path, auth, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if code/100 != 2 {
		return nil, fmt.Errorf("%s %s = %d %s", method, path, code, data)
	}
	return data, nil
}

func (c *client) offersDelta(ctx context.Context) (bool, error) {
	data, err := c.must(ctx, 0, "GET", "/api/capabilities", c.token, nil)
	if err != nil {
		return false, err
	}
	var caps struct {
		Capabilities []struct {
			Capability string `json:"capability"`
			Version    int    `json:"version"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(data, &caps); err != nil {
		return false, err
	}
	for _, cp := range caps.Capabilities {
		if cp.Capability == "delta-checkpoint-uploads-v2" && cp.Version >= 2 {
			return true, nil
		}
	}
	return false, nil
}

// begin creates the stack, creates an update (through replica r) and starts it (through r+1); it returns
// the update's path and lease header.
func (c *client) begin(ctx context.Context, r int, stack string, rec func(kind string, d time.Duration, err error)) (string, string, error) {
	if _, err := c.must(ctx, r, "POST", "/api/stacks/bench/proj", c.token, fmt.Appendf(nil, `{"stackName":%q}`, stack)); err != nil {
		return "", "", err
	}
	t := time.Now()
	data, err := c.must(ctx, r, "POST", "/api/stacks/bench/proj/"+stack+"/update", c.token, []byte(`{"name":"proj"}`))
	rec(kindCreate, time.Since(t), err)
	if err != nil {
		return "", "", err
	}
	var cr struct {
		UpdateID string `json:"updateID"`
	}
	if err := json.Unmarshal(data, &cr); err != nil {
		return "", "", err
	}
	path := "/api/stacks/bench/proj/" + stack + "/update/" + cr.UpdateID
	t = time.Now()
	data, err = c.must(ctx, r+1, "POST", path, c.token, []byte(`{}`))
	rec(kindStart, time.Since(t), err)
	if err != nil {
		return "", "", err
	}
	var sr struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(data, &sr); err != nil {
		return "", "", err
	}
	return path, "update-token " + sr.Token, nil
}

// resource renders resource i of a deployment at revision rev (~400 bytes, compact JSON).
func resource(i, rev int) string {
	return fmt.Sprintf(`{"urn":"urn:pulumi:bench::proj::cdkx:core:Data::res-%05d","custom":true,"id":"id-%05d","type":"cdkx:core:Data",`+
		`"inputs":{"name":"res-%05d","size":%d,"tags":{"team":"platform","env":"bench"}},`+
		`"outputs":{"arn":"arn:cdkx:data:eu-west-1:123456789012:res-%05d","name":"res-%05d","revision":%d,"size":%d,"tags":{"team":"platform","env":"bench"}},`+
		`"parent":"urn:pulumi:bench::proj::pulumi:pulumi:Stack::proj-bench","provider":"urn:pulumi:bench::proj::pulumi:providers:cdkx::default::0",`+
		`"cdkx":{"logicalId":"res-%05d","type":"Cdkx::Core::Data","provider":"core","status":"CREATE_COMPLETE","updatedAt":"2026-01-02T03:04:05Z"}}`,
		i, i, i, i, i, i, rev, i, i)
}

// deployment renders an UntypedDeployment of n resources whose resource changed is at revision rev (the
// others at 0). It is a cdkx document (a "cdkx" header, each resource with its "cdkx" logical ID, in
// order), so that the Pulumi checkpoints and the cdkx commits of a deploy edit the same text.
func deployment(n, changed, rev int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"bench","version":"v3.259.0"},` +
		`"cdkx":{"format":1,"stack":"bench","outputs":{},"updatedAt":"2026-01-02T03:04:05Z"},"resources":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		r := 0
		if i == changed {
			r = rev
		}
		b.WriteString(resource(i, r))
	}
	b.WriteString(`]}}`)
	return b.Bytes()
}

// textEdit is one edit of a deploymentDelta, as the Pulumi CLI sends it.
type textEdit struct {
	Span    span   `json:"Span"`
	NewText string `json:"NewText"`
}

type span struct {
	URI   string `json:"uri"`
	Start pos    `json:"start"`
	End   pos    `json:"end"`
}

type pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Offset int `json:"offset"`
}

// diff returns the one edit that turns prev into next (common prefix and suffix kept).
func diff(prev, next []byte) textEdit {
	p := 0
	for p < len(prev) && p < len(next) && prev[p] == next[p] {
		p++
	}
	s := 0
	for s < len(prev)-p && s < len(next)-p && prev[len(prev)-1-s] == next[len(next)-1-s] {
		s++
	}
	return textEdit{
		Span:    span{Start: pos{Line: 1, Column: p + 1, Offset: p}, End: pos{Line: 1, Column: len(prev) - s + 1, Offset: len(prev) - s}},
		NewText: string(next[p : len(next)-s]),
	}
}

// commitBody is the body of the cdkx commit that turns prev (resource (i-1) mod n at revision i) into next
// (resource i mod n at revision i+1): one edit per resource, each replacing the whole resource object.
func commitBody(seq int64, prev, next []byte, n, i int) ([]byte, error) {
	var edits []textEdit
	for _, k := range []int{(i - 1) % n, i % n} {
		oldText, newText := resource(k, 0), resource(k, 0)
		if k == (i-1)%n {
			oldText = resource(k, i)
		}
		if k == i%n {
			newText = resource(k, i+1)
		}
		at := bytes.Index(prev, []byte(oldText))
		if at < 0 {
			return nil, fmt.Errorf("commit %d: resource %d not found in the previous deployment", seq, k)
		}
		var e textEdit
		e.Span.Start.Offset, e.Span.End.Offset, e.NewText = at, at+len(oldText), newText
		edits = append(edits, e)
	}
	if edits[0].Span.Start.Offset > edits[1].Span.Start.Offset {
		edits[0], edits[1] = edits[1], edits[0]
	}
	sum := sha256.Sum256(next)
	return json.Marshal(map[string]any{"checkpointHash": hex.EncodeToString(sum[:]), "sequenceNumber": seq,
		"baseVersion": seq - 1, "resourceCount": n, "deploymentDelta": edits})
}

func deltaBody(seq int64, prev, next []byte) ([]byte, error) {
	sum := sha256.Sum256(next)
	return json.Marshal(map[string]any{
		"version": 3, "checkpointHash": hex.EncodeToString(sum[:]), "sequenceNumber": seq,
		"deploymentDelta": []textEdit{diff(prev, next)},
	})
}

func verbatimBody(seq int64, dep []byte) []byte {
	return fmt.Appendf(nil, `{"version":3,"untypedDeployment":%s,"sequenceNumber":%d}`, dep, seq)
}

// level runs n concurrent deploys and returns the latencies per kind and the wall time.
func (c *client) level(ctx context.Context, n, checkpoints int, bound time.Duration, resources int, delta bool) (map[string]*latencies, time.Duration, error) {
	var mu sync.Mutex
	res := map[string]*latencies{}
	for _, k := range kinds {
		res[k] = &latencies{}
	}
	rec := func(kind string, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res[kind].errors++
			return
		}
		res[kind].d = append(res[kind].d, d)
	}
	deadline := time.Now().Add(bound)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			errs[g] = c.deploy(ctx, g, fmt.Sprintf("c%d-%d", n, g), checkpoints, deadline, resources, delta, rec)
		})
	}
	wg.Wait()
	wall := time.Since(start)
	return res, wall, errors.Join(errs...)
}

// deploy is one deploy: create, start, the checkpoint loop with events, complete.
func (c *client) deploy(ctx context.Context, g int, stack string, checkpoints int, deadline time.Time, resources int, delta bool,
	rec func(kind string, d time.Duration, err error)) error {
	path, lease, err := c.begin(ctx, g, stack, rec)
	if err != nil {
		return err
	}
	r := g // the replica of the next request; every request moves on to the other one
	send := func(kind, suffix string, body []byte) error {
		r++
		t := time.Now()
		_, err := c.must(ctx, r, "PATCH", path+suffix, lease, body)
		rec(kind, time.Since(t), err)
		return err
	}
	var prev []byte
	seq, evSeq := int64(0), 0
	for i := 0; i < checkpoints && time.Now().Before(deadline); i++ {
		if think > 0 {
			// Uniform in [think/2, 3·think/2), so that the deploys do not all send at once.
			time.Sleep(think/2 + mrand.N(think))
		}
		seq++
		next := deployment(resources, i%resources, i+1)
		if delta && prev != nil && i%3 == 2 {
			// Each deploy has a stack of its own: checkpoint seq makes version seq, on base seq-1. The cdkx
			// client edits whole resources: here the one that changed back to revision 0 and the one that
			// changes now.
			body, err := commitBody(seq, prev, next, resources, i)
			if err != nil {
				return err
			}
			if err := send(kindCommit, "/commit", body); err != nil {
				return err
			}
		} else if !delta || prev == nil || i%3 == 0 {
			if err := send(kindVerbatim, "/checkpointverbatim", verbatimBody(seq, next)); err != nil {
				return err
			}
		} else {
			body, err := deltaBody(seq, prev, next)
			if err != nil {
				return err
			}
			if err := send(kindDelta, "/checkpointdelta", body); err != nil {
				return err
			}
		}
		prev = next
		// A batch of engine events (resource pre/outputs) after every checkpoint.
		var evs bytes.Buffer
		evs.WriteString(`{"events":[`)
		for k := range 4 {
			if k > 0 {
				evs.WriteByte(',')
			}
			fmt.Fprintf(&evs, `{"sequence":%d,"timestamp":%d,"resourcePreEvent":{"metadata":{"op":"update","urn":"urn:pulumi:bench::proj::cdkx:core:Data::res-%05d","type":"cdkx:core:Data"}}}`,
				evSeq, time.Now().Unix(), i%resources)
			evSeq++
		}
		evs.WriteString(`]}`)
		if err := sendEvents(ctx, c, &r, path, lease, evs.Bytes(), rec); err != nil {
			return err
		}
	}
	r++
	t := time.Now()
	_, err = c.must(ctx, r, "POST", path+"/complete", lease, []byte(`{"status":"succeeded"}`))
	rec(kindComplete, time.Since(t), err)
	return err
}

func sendEvents(ctx context.Context, c *client, r *int, path, lease string, body []byte, rec func(string, time.Duration, error)) error {
	*r++
	t := time.Now()
	_, err := c.must(ctx, *r, "POST", path+"/events/batch", lease, body)
	rec(kindEvents, time.Since(t), err)
	return err
}

// storageDeploy deploys n resources to a new stack, one delta checkpoint per resource added, through
// alternating replicas, and returns the size of the final deployment.
func (c *client) storageDeploy(ctx context.Context, stack string, n int) (int, error) {
	path, lease, err := c.begin(ctx, 0, stack, func(string, time.Duration, error) {})
	if err != nil {
		return 0, err
	}
	prev := deployment(0, -1, 0)
	if _, err := c.must(ctx, 0, "PATCH", path+"/checkpointverbatim", lease, verbatimBody(1, prev)); err != nil {
		return 0, err
	}
	for i := range n {
		// Insert resource i before the closing "]}}".
		at := len(prev) - len(`]}}`)
		text := resource(i, 0)
		if i > 0 {
			text = "," + text
		}
		next := make([]byte, 0, len(prev)+len(text))
		next = append(append(append(next, prev[:at]...), text...), prev[at:]...)
		body, err := deltaBody(int64(i+2), prev, next)
		if err != nil {
			return 0, err
		}
		if _, err := c.must(ctx, i+1, "PATCH", path+"/checkpointdelta", lease, body); err != nil {
			return 0, err
		}
		prev = next
	}
	if _, err := c.must(ctx, n+1, "POST", path+"/complete", lease, []byte(`{"status":"succeeded"}`)); err != nil {
		return 0, err
	}
	return len(prev), nil
}

// think is the time a deploy waits before each checkpoint request (-think).
var think time.Duration

// cdkxBin is the cdkx binary of the deploys over HTTP ("" skips them).
var cdkxBin string

// buildCdkx builds ./cmd/cdkx into a temporary directory.
func buildCdkx() (string, error) {
	dir, err := os.MkdirTemp("", "cdkx-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cdkx")
	out, err := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "./cmd/cdkx").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/cdkx: %w\n%s", err, out)
	}
	return bin, nil
}

// writeDataAssembly writes a one-stack assembly (stack name stack) of n Cdkx::Core::Data resources in
// chains of depth 10 into dir/cdkx.out.
func writeDataAssembly(dir, stack string, n int) error {
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	resources := map[string]any{}
	for i := range n {
		c, d := i/10, i%10
		id := fmt.Sprintf("Chain%dNode%d%08X", c, d, i)
		input := map[string]any{"chain": c, "depth": d, "payload": "value-" + id}
		if d > 0 {
			input["previous"] = map[string]any{"ref": fmt.Sprintf("Chain%dNode%d%08X", c, d-1, i-1), "attr": "id"}
		}
		resources[id] = map[string]any{"type": "Cdkx::Core::Data", "provider": "cdkx", "properties": map[string]any{"input": input}}
	}
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{
		stack: map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": stack + ".json"}}}}
	for name, v := range map[string]any{"manifest.json": manifest, stack + ".json": map[string]any{"resources": resources}} {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cliDeploys runs `cdkx deploy --state http://…` of each size and prints what it sent and stored.
func cliDeploys(ctx context.Context, db *pgxpool.Pool, reps []*replica, token, bin string, sizes []int) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cdkx deploy over HTTP\twall\trequests\tsent\tcheckpoints\tfinal state\tstored\tstored/resource\t")
	for _, n := range sizes {
		dir, err := os.MkdirTemp("", "cdkx-bench-http-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		stack := fmt.Sprintf("Http%d", n)
		if err := writeDataAssembly(dir, stack, n); err != nil {
			return err
		}
		r := reps[0]
		reqs, sent := r.requests.Load(), r.bodyBytes.Load()
		cmd := exec.CommandContext(ctx, bin, "deploy", "--state", r.url, "--concurrency", "10", "--no-color")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CI=true", "CDKX_TOKEN="+token, "CDKX_PROJECT=bench")
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("cdkx deploy of %d resources over HTTP: %w\n%s", n, err, out)
		}
		wall := time.Since(start)
		var rows, stored, final int64
		if err := db.QueryRow(ctx, `SELECT count(*), coalesce(sum(coalesce(octet_length(c.data), 0) + coalesce(octet_length(c.delta), 0)), 0)
FROM svc_checkpoints c JOIN svc_stacks s ON s.id = c.stack_id WHERE s.name = $1`, stack).Scan(&rows, &stored); err != nil {
			return err
		}
		exp, err := exec.CommandContext(ctx, "curl", "-sf", "-H", "Authorization: token "+token,
			r.url+"/api/stacks/organization/bench/"+stack+"/export").Output()
		if err == nil {
			final = int64(len(exp))
		}
		fmt.Fprintf(tw, "%d resources\t%s\t%d\t%s\t%d\t%s\t%s\t%d B\t\n", n, wall.Round(time.Millisecond), r.requests.Load()-reqs,
			mb(r.bodyBytes.Load()-sent), rows, mb(final), mb(stored), stored/int64(n))
	}
	return tw.Flush()
}

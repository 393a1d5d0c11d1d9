//go:build e2e

package e2e

// The TestDeployments* tests run the deployment queue (propose, approve, reject, abort, compare, agents;
// issue 10) through the real cdkx binary:
//
//   - TestDeploymentsScenario: one scenario on PowerDNS, run on each state backend (a SQLite file, a
//     PostgreSQL schema, a `cdkx server`): proposals, a deploy beside an open proposal, rejection, approval
//     with --run, compare, 6 deploys drained by `cdkx agent --once`, a stale proposal, and the abort of a
//     300-record-set run.
//   - TestDeploymentsServerSubmitters, TestDeploymentsServerKilledWaiter, TestDeploymentsServerApprover:
//     the queue on `cdkx server` under load (two replicas sharing one database, behind svcFront), a killed
//     waiter, two CI jobs and an approver (tokens of their own).
//   - TestDeploymentsSecrets: the RabbitMQ example's password sealed with CDKX_SECRETS_PASSPHRASE in the
//     snapshot of a proposal, on each backend; never in plain text in the SQLite file or the tables.
//
// They need PowerDNS (PDNS_API_URL …, see e2e_test.go), PostgreSQL (CDKX_TEST_POSTGRES_URL, see
// service_test.go) and, for the secrets test, RabbitMQ (RABBITMQ_API_URL …, see rmq_test.go); each part
// skips without its server:
//
//	go test -tags e2e -run Deployments -count=1 -v ./e2e/

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
)

// depBackends are the state backends every scenario runs on.
var depBackends = []string{"sqlite", "postgres", "server"}

// depRig is one backend with its cdkx binary, working directory and client environment.
type depRig struct {
	t       *testing.T
	bin     string
	dir     string // the working directory of every command; assemblies live in its subdirectories
	env     []string
	backend string
	state   string // CDKX_STATE: the SQLite file, the PostgreSQL URL or the server's URL
	dbURL   string // the PostgreSQL database of the postgres backend and of the server ("" for sqlite)
}

// depOpen sets up backend for the test: a SQLite file in a new folder, a fresh PostgreSQL schema, or a
// `cdkx server` on a fresh schema with an API token named "e2e". Tests needing PostgreSQL skip without it.
func depOpen(t *testing.T, bin, backend string) *depRig {
	t.Helper()
	r := &depRig{t: t, bin: bin, dir: t.TempDir(), backend: backend}
	token := ""
	switch backend {
	case "sqlite":
		r.state = filepath.Join(t.TempDir(), "state.db")
	case "postgres":
		r.dbURL = postgrestest.FreshSchema(t)
		r.state = r.dbURL
	case "server":
		r.dbURL = postgrestest.FreshSchema(t)
		token = svcToken(t, bin, r.dbURL)
		r.state = svcStartServer(t, bin, r.dbURL).URL
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	r.env = append(svcClientEnv(token), "CDKX_STATE="+r.state)
	return r
}

// with returns a copy of the rig whose commands also get the environment variables kvs (later wins).
func (r *depRig) with(kvs ...string) *depRig {
	c := *r
	c.env = append(slices.Clone(r.env), kvs...)
	return &c
}

// run runs cdkx with args and returns how it ended; the test fails when it could not run or hung.
func (r *depRig) run(args ...string) svcResult {
	r.t.Helper()
	res := svcExec(r.bin, r.dir, r.env, args...)
	if res.err != nil {
		r.t.Fatalf("cdkx %s: %v\n%s", strings.Join(args, " "), res.err, res.output())
	}
	return res
}

// want runs cdkx with args and fails the test unless it exits with code.
func (r *depRig) want(code int, args ...string) svcResult {
	r.t.Helper()
	res := r.run(args...)
	if res.code != code {
		r.t.Fatalf("cdkx %s exited %d, want %d:\n%s", strings.Join(args, " "), res.code, code, res.output())
	}
	return res
}

// depPlan is a deployment's plan as show and list print it.
type depPlan struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Replace int `json:"replace"`
	Delete  int `json:"delete"`
	Steps   []struct {
		Resource string   `json:"resource"`
		Type     string   `json:"type"`
		Op       string   `json:"op"`
		Paths    []string `json:"paths"`
	} `json:"steps"`
}

// depDeployment is a deployment as `deployments show --json` and `list --json` print it.
type depDeployment struct {
	ID           string     `json:"id"`
	Stack        string     `json:"stack"`
	Kind         string     `json:"kind"`
	Status       string     `json:"status"`
	Message      string     `json:"message"`
	CreatedBy    string     `json:"createdBy"`
	ApprovedBy   string     `json:"approvedBy"`
	RejectedBy   string     `json:"rejectedBy"`
	AbortedBy    string     `json:"abortedBy"`
	CreatedAt    *time.Time `json:"createdAt"`
	StartedAt    *time.Time `json:"startedAt"`
	FinishedAt   *time.Time `json:"finishedAt"`
	Plan         *depPlan   `json:"plan"`
	SnapshotHash string     `json:"snapshotHash"`
	StateVersion int64      `json:"stateVersion"`
	Version      int64      `json:"version"`
	Runner       string     `json:"runner"`
	Error        string     `json:"error"`
	Events       []struct {
		LogicalID string `json:"logicalId"`
		Status    string `json:"status"`
	} `json:"events"`
}

// depShowKeys are the fields `deployments show --json` must print (issue 10).
var depShowKeys = []string{"id", "stack", "kind", "status", "message", "createdBy", "approvedBy", "createdAt", "startedAt",
	"finishedAt", "plan", "snapshotHash", "stateVersion", "error", "events"}

// show returns `deployments show ID --json`.
func (r *depRig) show(id string) depDeployment {
	r.t.Helper()
	res := r.want(0, "deployments", "show", id, "--json")
	var d depDeployment
	if err := json.Unmarshal([]byte(res.stdout), &d); err != nil {
		r.t.Fatalf("deployments show %s --json: %v\n%s", id, err, res.stdout)
	}
	return d
}

// checkShowKeys checks that `deployments show ID --json` prints every field of depShowKeys.
func (r *depRig) checkShowKeys(id, what string) {
	r.t.Helper()
	res := r.want(0, "deployments", "show", id, "--json")
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &keys); err != nil {
		r.t.Fatalf("deployments show %s --json: %v\n%s", id, err, res.stdout)
	}
	var missing []string
	for _, k := range depShowKeys {
		if _, ok := keys[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		r.t.Errorf("deployments show --json of %s has no field %s:\n%s", what, strings.Join(missing, ", "), res.stdout)
	}
}

// list returns `deployments list --json --limit 0 ARGS…`: newest first.
func (r *depRig) list(args ...string) []depDeployment {
	r.t.Helper()
	res := r.want(0, append([]string{"deployments", "list", "--json", "--limit", "0"}, args...)...)
	var ds []depDeployment
	if err := json.Unmarshal([]byte(res.stdout), &ds); err != nil {
		r.t.Fatalf("deployments list --json %s: %v\n%s", strings.Join(args, " "), err, res.stdout)
	}
	return ds
}

// depRecorded is what deploy --propose and --no-wait print per stack with --json.
type depRecorded struct {
	ID     string `json:"id"`
	Stack  string `json:"stack"`
	Status string `json:"status"`
	Plan   struct {
		Create  int `json:"create"`
		Update  int `json:"update"`
		Replace int `json:"replace"`
		Delete  int `json:"delete"`
	} `json:"plan"`
}

// record runs `cdkx deploy --app APP --json FLAGS…` (--propose or --no-wait), which must print one JSON
// object for the one stack of the assembly with exactly the fields id, stack, status and plan.
func (r *depRig) record(app string, flags ...string) depRecorded {
	r.t.Helper()
	args := append([]string{"deploy", "--app", app, "--json"}, flags...)
	res := r.want(0, args...)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 1 {
		r.t.Fatalf("cdkx %s printed %d lines, want one JSON object:\n%s", strings.Join(args, " "), len(lines), res.output())
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[0]), &keys); err != nil {
		r.t.Fatalf("cdkx %s: %v\n%s", strings.Join(args, " "), err, res.stdout)
	}
	got := slices.Sorted(maps.Keys(keys))
	if !slices.Equal(got, []string{"id", "plan", "stack", "status"}) {
		r.t.Errorf("cdkx %s prints the fields %v, want id, plan, stack, status:\n%s", strings.Join(args, " "), got, lines[0])
	}
	var plan map[string]json.RawMessage
	_ = json.Unmarshal(keys["plan"], &plan)
	for _, k := range []string{"create", "update", "replace", "delete"} {
		if _, ok := plan[k]; !ok {
			r.t.Errorf("cdkx %s: the plan has no %q:\n%s", strings.Join(args, " "), k, lines[0])
		}
	}
	var d depRecorded
	if err := json.Unmarshal([]byte(lines[0]), &d); err != nil {
		r.t.Fatal(err)
	}
	return d
}

// depChange is one entry of `deployments compare --json`.
type depChange struct {
	Resource string `json:"resource"`
	Path     string `json:"path"`
	From     any    `json:"from"`
	To       any    `json:"to"`
}

func (r *depRig) compare(a, b string) []depChange {
	r.t.Helper()
	res := r.want(0, "deployments", "compare", a, b, "--json")
	var out struct {
		Changes *[]depChange `json:"changes"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Changes == nil {
		r.t.Fatalf("deployments compare %s %s --json: want {\"changes\": […]}, got %v:\n%s", a, b, err, res.stdout)
	}
	return *out.Changes
}

// export returns the resources of `cdkx state export` (exportState of crash_test.go, on stdout only).
func (r *depRig) export() []exportedResource {
	r.t.Helper()
	return exportState(r.t, func(args ...string) (int, string) {
		res := r.run(args...)
		return res.code, res.stdout
	})
}

// --- PowerDNS assemblies ---

// depRecord is one A record set of a depWriteZone assembly.
type depRecord struct {
	id, name string
	ttl      int
	records  []string
}

// depWriteZone writes DIR/cdkx.out: stack with a PowerDNS zone (logical ID <stack>Zone5F3A9C21) and the
// record sets recs in it, and returns the assembly's path.
func depWriteZone(t *testing.T, dir, stack, zone string, recs []depRecord) string {
	t.Helper()
	zoneID := stack + "Zone5F3A9C21"
	resources := map[string]any{
		zoneID: map[string]any{"type": "PowerDNS::DNS::Zone", "provider": "powerdns",
			"properties": map[string]any{"name": zone, "kind": "Native", "nameservers": []string{"ns1." + zone}},
			"metadata":   map[string]any{"cdkx:path": stack + "/Zone"}},
	}
	for _, rec := range recs {
		resources[rec.id] = map[string]any{"type": "PowerDNS::DNS::RecordSet", "provider": "powerdns",
			"properties": map[string]any{"zoneId": map[string]any{"ref": zoneID, "attr": "zoneId"},
				"name": rec.name, "type": "A", "ttl": rec.ttl, "records": rec.records},
			"dependsOn": []string{zoneID}}
	}
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{stack: map[string]any{"type": "cdkx:stack",
		"properties": map[string]any{"templateFile": stack + ".json"}, "displayName": stack}}}
	for name, v := range map[string]any{"manifest.json": manifest, stack + ".json": map[string]any{"resources": resources}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Logical IDs of stack Dns, the scenario's stack.
const (
	depWww  = "DnsWwwRecordSet1E6C2A94"
	depAPI  = "DnsApiRecordSet4A7D9B03"
	depMail = "DnsMailRecordSet9F1B3C65"
)

// depDNS is a version of stack Dns: www's ttl, api's address, mail's ttl.
type depDNS struct {
	www  int
	api  string
	mail int
}

// write writes this version of stack Dns (zone zone) under r.dir/name and returns the assembly's path.
func (v depDNS) write(r *depRig, name, zone string) string {
	r.t.Helper()
	return depWriteZone(r.t, filepath.Join(r.dir, name), "Dns", zone, []depRecord{
		{id: depWww, name: "www." + zone, ttl: v.www, records: []string{"127.0.0.10"}},
		{id: depAPI, name: "api." + zone, ttl: 300, records: []string{v.api}},
		{id: depMail, name: "mail." + zone, ttl: v.mail, records: []string{"127.0.0.25"}},
	})
}

// depRRSet returns the ttl and records of an rrset of zone at PowerDNS; ok is false when it is absent.
func depRRSet(t *testing.T, p pdns, zone, name, rtype string) (ttl int, records []string, ok bool) {
	t.Helper()
	z, err := p.zone(zone)
	if err != nil {
		t.Fatalf("PowerDNS zone %s: %v", zone, err)
	}
	if z == nil {
		return 0, nil, false
	}
	for _, rr := range z.RRSets {
		if strings.EqualFold(rr.Name, name) && rr.Type == rtype {
			for _, rec := range rr.Records {
				records = append(records, rec.Content)
			}
			sort.Strings(records)
			return rr.TTL, records, true
		}
	}
	return 0, nil, false
}

// checkDNS checks that PowerDNS serves version v of stack Dns in zone; what names the moment.
func (v depDNS) check(t *testing.T, p pdns, zone, what string) {
	t.Helper()
	for _, c := range []struct {
		name, record string
		ttl          int
	}{{"www." + zone, "127.0.0.10", v.www}, {"api." + zone, v.api, 300}, {"mail." + zone, "127.0.0.25", v.mail}} {
		ttl, recs, ok := depRRSet(t, p, zone, c.name, "A")
		if !ok || ttl != c.ttl || !slices.Equal(recs, []string{c.record}) {
			t.Errorf("%s: PowerDNS has %s A ttl %d %v (present %t), want ttl %d [%s]", what, c.name, ttl, recs, ok, c.ttl, c.record)
		}
	}
}

// depPDNS returns the PowerDNS of the environment, or skips the test.
func depPDNS(t *testing.T) pdns {
	t.Helper()
	p := pdns{apiURL: os.Getenv("PDNS_API_URL"), apiKey: envOr("PDNS_API_KEY", "e2e-key"),
		serverID: envOr("PDNS_SERVER_ID", "localhost"), dnsPort: envOr("PDNS_DNS_PORT", "15353")}
	if p.apiURL == "" {
		t.Skip("PDNS_API_URL is unset: start PowerDNS with scripts/pdns-up.sh DIR")
	}
	if err := p.ping(); err != nil {
		t.Fatalf("PowerDNS at %s does not answer: %v", p.apiURL, err)
	}
	return p
}

// depFreshZone deletes zone at PowerDNS now (left by an earlier run) and when the test ends.
func depFreshZone(t *testing.T, p pdns, zone string) {
	t.Helper()
	if ok, _ := p.zoneExists(zone); ok {
		if err := p.deleteZone(zone); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if ok, _ := p.zoneExists(zone); ok {
			_ = p.deleteZone(zone)
		}
	})
}

// depUntil polls cond every 100 ms until it holds (true) or timeout passes (false).
func depUntil(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// depCountLines counts the lines of out that hold every one of subs.
func depCountLines(out string, subs ...string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			n++
		}
	}
	return n
}

func depJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// depCheckRunOrder checks that ds (in creation order: the order of list, which is by sequence number)
// all COMPLETED and each started after the one before it finished. It returns how many were created
// (createdAt) before the one listed before them: the creating process's clock, read before the record is
// stored, may disagree with the order the backend stored them in.
func depCheckRunOrder(t *testing.T, what string, ds []depDeployment) (inversions int) {
	t.Helper()
	for i, d := range ds {
		if d.Status != "COMPLETED" || d.StartedAt == nil || d.FinishedAt == nil || d.CreatedAt == nil {
			t.Errorf("%s: deployment %d (%s) is %s, started %v, finished %v (error %q); want COMPLETED", what, i+1, d.ID, d.Status, d.StartedAt, d.FinishedAt, d.Error)
			continue
		}
		if i == 0 || ds[i-1].FinishedAt == nil || ds[i-1].CreatedAt == nil {
			continue
		}
		prev := ds[i-1]
		if d.CreatedAt.Before(*prev.CreatedAt) {
			inversions++
			t.Logf("%s: note: deployment %d (%s) has createdAt %s, before that of deployment %d (%s), %s, which the backend stored first",
				what, i+1, d.ID, d.CreatedAt.Format(time.RFC3339Nano), i, prev.ID, prev.CreatedAt.Format(time.RFC3339Nano))
		}
		if d.StartedAt.Before(*prev.FinishedAt) {
			t.Errorf("%s: deployment %d (%s) started at %s, before deployment %d (%s), created earlier, finished at %s: not one at a time in creation order",
				what, i+1, d.ID, d.StartedAt.Format(time.RFC3339Nano), i, prev.ID, prev.FinishedAt.Format(time.RFC3339Nano))
		}
	}
	return inversions
}

// --- the scenario on each backend ---

// TestDeploymentsScenario runs the end-to-end scenario on PowerDNS on each backend: stack Dns (a
// zone and three A record sets) goes through proposals, a deploy beside an open proposal, a rejection, an
// approval with --run, compare, 6 --no-wait deploys drained by one agent, and a stale proposal; stack Big
// (300 record sets, through a proxy that slows PowerDNS down) is aborted mid-run and converges after.
func TestDeploymentsScenario(t *testing.T) {
	depOnPDNS(t, depScenario)
}

// depOnPDNS runs test as a subtest on each backend (depBackends), with a rig of the real cdkx binary
// whose environment points at the private PowerDNS.
func depOnPDNS(t *testing.T, test func(t *testing.T, r *depRig, p pdns)) {
	t.Helper()
	p := depPDNS(t)
	bin := svcBuild(t)
	for _, backend := range depBackends {
		t.Run(backend, func(t *testing.T) {
			r := depOpen(t, bin, backend)
			r = r.with("PDNS_API_URL="+p.apiURL, "PDNS_API_KEY="+p.apiKey, "PDNS_SERVER_ID="+p.serverID)
			test(t, r, p)
		})
	}
}

func depScenario(t *testing.T, r *depRig, p pdns) {
	zone := "dep-" + r.backend + ".test."
	depFreshZone(t, p, zone)
	step := func(name string, start time.Time) {
		t.Logf("%-48s %s", name, time.Since(start).Round(time.Millisecond))
	}

	// v1, deployed directly.
	start := time.Now()
	v1 := depDNS{www: 300, api: "127.0.0.20", mail: 300}
	r.want(0, "deploy", "--app", v1.write(r, "v1", zone))
	v1.check(t, p, zone, "after the first deploy")
	step("deploy v1", start)

	// A proposal: PowerDNS untouched, show has the plan.
	start = time.Now()
	rejected := depDNS{www: 300, api: "127.0.0.20", mail: 999}
	pr := r.record(rejected.write(r, "rejected", zone), "--propose", "--message", "raise the mail ttl")
	if pr.Status != "PROPOSED" || pr.Stack != "Dns" || pr.Plan.Update != 1 || pr.Plan.Create+pr.Plan.Replace+pr.Plan.Delete != 0 {
		t.Errorf("deploy --propose printed %+v, want stack Dns PROPOSED with a plan of 1 update", pr)
	}
	v1.check(t, p, zone, "after deploy --propose")
	r.checkShowKeys(pr.ID, "a proposal")
	d := r.show(pr.ID)
	switch {
	case d.Status != "PROPOSED" || d.Kind != "deploy" || d.Stack != "Dns" || d.Message != "raise the mail ttl":
		t.Errorf("show %s: status %s, kind %s, stack %s, message %q; want a PROPOSED deploy of Dns with its message", pr.ID, d.Status, d.Kind, d.Stack, d.Message)
	case d.CreatedBy == "" || d.CreatedAt == nil || d.StartedAt != nil || d.FinishedAt != nil || d.SnapshotHash == "" || d.StateVersion < 1:
		t.Errorf("show %s: createdBy %q, createdAt %v, startedAt %v, finishedAt %v, snapshotHash %q, stateVersion %d; want who and when it was created, not started, a snapshot, planned at a version ≥ 1",
			pr.ID, d.CreatedBy, d.CreatedAt, d.StartedAt, d.FinishedAt, d.SnapshotHash, d.StateVersion)
	case d.Plan == nil || d.Plan.Update != 1 || len(d.Plan.Steps) != 1 || d.Plan.Steps[0].Resource != "Dns/"+depMail ||
		d.Plan.Steps[0].Op != "update" || !slices.Equal(d.Plan.Steps[0].Paths, []string{"properties.ttl"}):
		t.Errorf("show %s: plan %s, want one update of Dns/%s changing properties.ttl", pr.ID, depJSON(d.Plan), depMail)
	}
	step("propose (PowerDNS untouched, show has the plan)", start)

	// A deploy beside the open proposal goes through at once (a proposal holds no place in the queue).
	start = time.Now()
	v1b := depDNS{www: 300, api: "127.0.0.20", mail: 250}
	res := r.want(0, "deploy", "--app", v1b.write(r, "v1b", zone), "--lock-timeout", "0")
	v1b.check(t, p, zone, "after a deploy beside an open proposal")
	all := r.list("--stack", "Dns")
	if len(all) == 0 {
		t.Fatal("deployments list --stack Dns is empty after three deploys and a proposal")
	}
	direct := all[0]
	if direct.Status != "COMPLETED" || direct.Kind != "deploy" || direct.ID == pr.ID {
		t.Errorf("the newest deployment of Dns after a direct deploy is %s %s %s, want that deploy, COMPLETED", direct.ID, direct.Kind, direct.Status)
	}
	if d := r.show(pr.ID); d.Status != "PROPOSED" {
		t.Errorf("the open proposal %s became %s when another deploy ran, want PROPOSED", pr.ID, d.Status)
	}
	step(fmt.Sprintf("deploy beside an open proposal (%s)", res.took.Round(time.Millisecond)), start)

	// Reject it: approving it is then refused with exit 1.
	start = time.Now()
	r.want(0, "deployments", "reject", pr.ID, "--message", "not now")
	if d := r.show(pr.ID); d.Status != "REJECTED" || d.FinishedAt == nil {
		t.Errorf("show %s after reject: status %s, finishedAt %v; want REJECTED with a finish time", pr.ID, d.Status, d.FinishedAt)
	}
	res = r.want(1, "deployments", "approve", pr.ID)
	t.Logf("approve of a rejected proposal: exit 1: %s", strings.TrimSpace(res.stderr))
	if d := r.show(pr.ID); d.Status != "REJECTED" || d.ApprovedBy != "" {
		t.Errorf("show %s after approving it: status %s, approvedBy %q; want REJECTED, approved by nobody", pr.ID, d.Status, d.ApprovedBy)
	}
	v1b.check(t, p, zone, "after approving a rejected proposal")
	step("reject, then approve refused", start)

	// Propose v2, approve --run: COMPLETED and PowerDNS has its values.
	start = time.Now()
	v2 := depDNS{www: 120, api: "127.0.0.21", mail: 250}
	p2 := r.record(v2.write(r, "v2", zone), "--propose", "--message", "lower www's ttl, move api")
	if p2.Status != "PROPOSED" || p2.Plan.Update != 2 {
		t.Errorf("deploy --propose of v2 printed %+v, want PROPOSED with 2 updates", p2)
	}
	v1b.check(t, p, zone, "after proposing v2")
	res = r.want(0, "deployments", "approve", p2.ID, "--run")
	v2.check(t, p, zone, "after approve --run")
	r.checkShowKeys(p2.ID, "a completed deployment")
	d = r.show(p2.ID)
	if d.Status != "COMPLETED" || d.ApprovedBy == "" || d.StartedAt == nil || d.FinishedAt == nil || len(d.Events) == 0 || d.Version <= d.StateVersion {
		t.Errorf("show %s after approve --run: status %s, approvedBy %q, started %v, finished %v, %d events, version %d (planned at %d); want COMPLETED, approved, with events and a new version",
			p2.ID, d.Status, d.ApprovedBy, d.StartedAt, d.FinishedAt, len(d.Events), d.Version, d.StateVersion)
	}
	step(fmt.Sprintf("propose v2, approve --run (%s)", res.took.Round(time.Millisecond)), start)

	// compare lists exactly the changed properties.
	start = time.Now()
	changes := r.compare(direct.ID, p2.ID)
	depCheckCompare(t, changes)
	step("compare", start)

	// 6 deploys queued with --no-wait, drained by one agent in creation order: the last one's values win.
	start = time.Now()
	var queued []string
	var last depDNS
	for i := 1; i <= 6; i++ {
		last = depDNS{www: 120 + i, api: fmt.Sprintf("127.0.1.%d", i), mail: 250}
		q := r.record(last.write(r, fmt.Sprintf("q%d", i), zone), "--no-wait")
		if q.Status != "PENDING" || q.Stack != "Dns" || q.Plan.Update != 2 {
			t.Errorf("deploy --no-wait %d printed %+v, want stack Dns PENDING with 2 updates", i, q)
		}
		queued = append(queued, q.ID)
	}
	v2.check(t, p, zone, "after queueing 6 deploys with --no-wait")
	step("queue 6 deploys with --no-wait", start)
	start = time.Now()
	res = r.want(0, "agent", "--once")
	last.check(t, p, zone, "after agent --once")
	ds := r.list("--stack", "Dns", "--limit", "6")
	slices.Reverse(ds)
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	if !slices.Equal(ids, queued) {
		t.Errorf("the 6 newest deployments of Dns, oldest first, are %v; want the queued ones in creation order %v", ids, queued)
	}
	if n := depCheckRunOrder(t, "agent --once", ds); n > 0 {
		t.Errorf("agent --once: %d of the 6 deployments queued one after the other have a createdAt before the one queued before them", n)
	}
	if n := depCountLines(res.output(), "Agent: deployment", "ended COMPLETED"); n != 6 {
		t.Errorf("agent --once reported %d deployments COMPLETED, want 6:\n%s", n, res.output())
	}
	step(fmt.Sprintf("agent --once drains 6 (%s)", res.took.Round(time.Millisecond)), start)
	// history is the short form of deployments list.
	var hs []depDeployment
	h := r.want(0, "history", "--stack", "Dns", "--json", "--limit", "0")
	if err := json.Unmarshal([]byte(h.stdout), &hs); err != nil || len(hs) != len(r.list("--stack", "Dns")) {
		t.Errorf("history --stack Dns --json: %d records (%v), want as many as deployments list", len(hs), err)
	}

	// A proposal made before another deploy moved the stack is refused as stale.
	start = time.Now()
	stale := depDNS{www: 77, api: last.api, mail: 250}
	ps := r.record(stale.write(r, "stale", zone), "--propose")
	mover := depDNS{www: 88, api: last.api, mail: 250}
	r.want(0, "deploy", "--app", mover.write(r, "mover", zone))
	res = r.run("deployments", "approve", ps.ID, "--run")
	if res.code != 1 || !strings.Contains(res.output(), "stale") {
		t.Errorf("approve --run of a proposal planned before the stack moved exited %d, want 1 with \"stale\":\n%s", res.code, res.output())
	} else {
		t.Logf("stale proposal refused: %s", strings.TrimSpace(res.stderr))
	}
	mover.check(t, p, zone, "after the stale proposal was refused")
	d = r.show(ps.ID)
	if d.Status == "COMPLETED" || d.Status == "RUNNING" {
		t.Errorf("the stale proposal %s is %s after it was refused", ps.ID, d.Status)
	}
	t.Logf("the stale proposal is %s: %s", d.Status, d.Error)
	step("stale proposal refused", start)

	// diff --record: a plan deployment, COMPLETED, no provider call.
	r.want(0, "diff", "--app", mover.write(r, "mover", zone), "--record")
	if d := r.list("--stack", "Dns", "--limit", "1")[0]; d.Kind != "plan" || d.Status != "COMPLETED" {
		t.Errorf("after diff --record the newest deployment of Dns is a %s %s, want a COMPLETED plan", d.Status, d.Kind)
	}

	depAbortBig(t, r, p)

	r.want(0, "destroy", "--force", "--app", mover.write(r, "mover", zone))
	if ok, _ := p.zoneExists(zone); ok {
		t.Errorf("zone %s still exists after destroy", zone)
	}
}

// depCheckCompare checks the changes between the direct deploy of v1b and the proposal v2: www's ttl
// 300 → 120 and api's records 127.0.0.20 → 127.0.0.21, nothing else.
func depCheckCompare(t *testing.T, changes []depChange) {
	t.Helper()
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s %s %s→%s", c.Resource, c.Path, depJSON(c.From), depJSON(c.To)))
	}
	sort.Strings(got)
	ttl := fmt.Sprintf("Dns/%s properties.ttl 300→120", depWww)
	// A changed element of a list is "properties.records[0]" (compare's documentation); a whole list is
	// accepted as well.
	recs := []string{fmt.Sprintf(`Dns/%s properties.records[0] "127.0.0.20"→"127.0.0.21"`, depAPI),
		fmt.Sprintf(`Dns/%s properties.records ["127.0.0.20"]→["127.0.0.21"]`, depAPI)}
	for _, rec := range recs {
		if want := []string{rec, ttl}; slices.Equal(got, want) {
			t.Logf("compare: %s", strings.Join(got, "; "))
			return
		}
	}
	t.Errorf("compare of the v1b deploy and the v2 proposal lists:\n  %s\nwant exactly:\n  %s\n  %s (or %s)",
		strings.Join(got, "\n  "), ttl, recs[0], recs[1])
}

// depBigRecords is the size of stack Big, the run the scenario aborts.
const depBigRecords = 300

// depAbortBig deploys stack Big (300 record sets) through a proxy that holds every PowerDNS request for
// 30 ms, aborts the run once 30 record sets are created, and checks it stops within 5 s with exit 130,
// state equal to PowerDNS, and that the next deploy converges.
func depAbortBig(t *testing.T, r *depRig, p pdns) {
	t.Helper()
	zone := "depbig-" + r.backend + ".test."
	depFreshZone(t, p, zone)
	var recs []depRecord
	for i := range depBigRecords {
		recs = append(recs, depRecord{id: fmt.Sprintf("BigRecord%03d%08X", i, i), name: fmt.Sprintf("r%03d.%s", i, zone),
			ttl: 300, records: []string{fmt.Sprintf("127.0.%d.%d", i/250, i%250+1)}})
	}
	app := depWriteZone(t, filepath.Join(r.dir, "big"), "Big", zone, recs)
	slow := svcNewFront(t, &svcServer{URL: p.apiURL})
	slow.setDelay(30 * time.Millisecond)

	start := time.Now()
	live := svcStart(t, r.bin, r.dir, append(slices.Clone(r.env), "PDNS_API_URL="+slow.URL), "deploy", "--app", app, "--concurrency", "2")
	created := func() int { return depCountLines(live.output(), "CREATE_COMPLETE", "PowerDNS::DNS::RecordSet") }
	if !depUntil(time.Minute, func() bool { return created() >= 30 }) {
		code, out := live.wait(time.Second)
		t.Fatalf("the deploy of Big did not create 30 record sets within a minute (exit %d):\n%s", code, out)
	}
	running := r.list("--stack", "Big", "--status", "RUNNING")
	if len(running) != 1 {
		t.Fatalf("stack Big has %d RUNNING deployments while its deploy runs, want 1: %+v", len(running), running)
	}
	id := running[0].ID
	before := created()
	abortAt := time.Now()
	res := r.want(0, "deployments", "abort", id)
	code, out := live.wait(time.Minute)
	stopped := live.ended().Sub(abortAt)
	after := created()
	t.Logf("abort of Big (%s) after %d of %d record sets created, %s into the run: abort took %s; the deploy exited %d %s after the abort began, having created %d",
		id, before, depBigRecords, abortAt.Sub(start).Round(time.Millisecond), res.took.Round(time.Millisecond), code, stopped.Round(time.Millisecond), after)
	if code != 130 {
		t.Errorf("the aborted deploy exited %d, want 130:\n%s", code, out)
	}
	if stopped > 5*time.Second {
		t.Errorf("the aborted deploy stopped %s after the abort began, want within 5 s", stopped.Round(time.Millisecond))
	}
	if after >= depBigRecords || strings.Contains(out, "Deploy complete") {
		t.Errorf("the aborted deploy created %d of %d record sets: it did not stop:\n%s", after, depBigRecords, out)
	}
	if d := r.show(id); d.Status != "ABORTED" || d.AbortedBy == "" || d.FinishedAt == nil {
		t.Errorf("show %s after the abort: status %s, abortedBy %q, finishedAt %v; want ABORTED, by someone, finished", id, d.Status, d.AbortedBy, d.FinishedAt)
	}

	// State equals PowerDNS: the record sets state holds (none pending) are exactly the zone's A rrsets.
	depStateMatchesPDNS(t, r, p, zone, "after the abort")

	// The next deploy converges.
	start = time.Now()
	r.want(0, "deploy", "--app", app)
	t.Logf("the next deploy of Big: exit 0 in %s", time.Since(start).Round(time.Millisecond))
	if n := depStateMatchesPDNS(t, r, p, zone, "after the next deploy"); n != depBigRecords {
		t.Errorf("after the next deploy PowerDNS holds %d A record sets in %s, want %d", n, zone, depBigRecords)
	}
	r.want(0, "diff", "--app", app, "--detailed-exitcode")
	r.want(0, "destroy", "--force", "--app", app)
}

// depStateMatchesPDNS checks that the record sets of stack Big's state are exactly the A rrsets of zone
// at PowerDNS, none pending, and returns how many there are.
func depStateMatchesPDNS(t *testing.T, r *depRig, p pdns, zone, what string) int {
	t.Helper()
	var recorded []string
	for _, res := range r.export() {
		if res.Pending != nil && string(res.Pending) != "null" {
			t.Errorf("%s: %s is still pending in state: %s", what, res.LogicalID, res.Pending)
		}
		if res.Type == "PowerDNS::DNS::RecordSet" && strings.HasPrefix(res.PhysicalID, zone+"/") {
			recorded = append(recorded, strings.ToLower(strings.Split(res.PhysicalID, "/")[1]))
		}
	}
	z, err := p.zone(zone)
	if err != nil || z == nil {
		t.Fatalf("%s: zone %s at PowerDNS: %v (exists %t)", what, zone, err, z != nil)
	}
	var live []string
	for _, rr := range z.RRSets {
		if rr.Type == "A" {
			live = append(live, strings.ToLower(rr.Name))
		}
	}
	sort.Strings(recorded)
	sort.Strings(live)
	if !slices.Equal(recorded, live) {
		t.Errorf("%s: state records %d record sets of %s and PowerDNS holds %d; they differ:\nonly in state:    %v\nonly at PowerDNS: %v",
			what, len(recorded), zone, len(live), depMinus(recorded, live), depMinus(live, recorded))
	} else {
		t.Logf("%s: state and PowerDNS agree on %d record sets of %s", what, len(live), zone)
	}
	return len(live)
}

// depMinus returns the elements of a not in b.
func depMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// --- the server under load ---

// TestDeploymentsServerSubmitters starts 10 `cdkx deploy --lock-timeout 5m` of one stack at once through a
// front on two server replicas sharing one database, each with a value of its own: all exit 0, the stack
// has exactly 10 deployments, all COMPLETED, run one at a time in creation order, each running its
// resources once; the final state holds the value of the deployment created last.
func TestDeploymentsServerSubmitters(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	token := svcToken(t, bin, dbURL)
	a, b := svcStartServer(t, bin, dbURL), svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, a, b)
	r := &depRig{t: t, bin: bin, dir: t.TempDir(), backend: "server", state: front.URL, dbURL: dbURL,
		env: append(svcClientEnv(token), "CDKX_STATE="+front.URL)}

	const submitters, resources = 10, 3
	results := make([]svcResult, submitters)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range submitters {
		dir := t.TempDir()
		svcWriteAssembly(t, dir, []string{"Shared"}, resources, fmt.Sprintf("sub-%02d", i))
		wg.Go(func() { results[i] = svcExec(bin, dir, r.env, "deploy", "--lock-timeout", "5m") })
	}
	wg.Wait()
	wall := time.Since(start)
	var took []time.Duration
	waited := 0
	for i, res := range results {
		took = append(took, res.took)
		if res.err != nil || res.code != 0 {
			t.Errorf("submitter %d (sub-%02d) exited %d (%v), want 0:\n%s", i, i, res.code, res.err, res.output())
		}
		if strings.Contains(res.stderr, "for the turn of deployment") {
			waited++
		}
	}
	slices.Sort(took)
	t.Logf("%d deploys of one stack through two replicas in %s: per process min %s, median %s, max %s; %d waited in the queue; front served %v, refused %d, 502 %d",
		submitters, wall.Round(time.Millisecond), took[0].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond),
		took[len(took)-1].Round(time.Millisecond), waited, front.servedCounts(), front.refused.Load(), front.failed.Load())

	ds := r.list("--stack", "Shared")
	slices.Reverse(ds)
	if len(ds) != submitters {
		t.Errorf("stack Shared has %d deployments, want %d (one per submitter, none lost, none twice)", len(ds), submitters)
	}
	inversions := depCheckRunOrder(t, "10 submitters", ds)
	t.Logf("10 submitters: %d of %d deployments have a createdAt before that of the deployment stored before them", inversions, len(ds))
	for _, d := range ds {
		depCheckRanOnce(t, r, d.ID, resources)
	}
	if len(ds) < 2 {
		t.FailNow()
	}
	// The value the last created deployment deployed: compare the first with it.
	lastValue := ""
	for _, c := range r.compare(ds[0].ID, ds[len(ds)-1].ID) {
		if c.Path == "properties.input.value" {
			lastValue, _ = c.To.(string)
		}
	}
	if lastValue == "" {
		t.Fatalf("compare of the first and the last deployment shows no change of properties.input.value")
	}
	st := svcExport(t, bin, r.dir, r.env, front.URL)["Shared"]
	svcCheckComplete(t, st, "Shared", resources)
	if st != nil {
		for _, res := range st.Resources {
			if res.value() != lastValue {
				t.Errorf("%s holds %q, want %q (the value of the deployment created last)", res.LogicalID, res.value(), lastValue)
			}
		}
	}
	first, lastD := ds[0], ds[len(ds)-1]
	if first.StartedAt != nil && lastD.FinishedAt != nil {
		t.Logf("deployments ran in creation order from %s to %s; final value %q (of %s, created last)",
			first.StartedAt.Format(time.RFC3339Nano), lastD.FinishedAt.Format(time.RFC3339Nano), lastValue, lastD.ID)
	}
	updates := svcUpdates(t, svcConnect(t, dbURL), "Shared")
	succeeded := 0
	for _, u := range updates {
		if u.status == "succeeded" {
			succeeded++
		}
	}
	t.Logf("svc_updates of Shared: %d, %d succeeded", len(updates), succeeded)
}

// depCheckRanOnce checks from a deployment's events that it ran each of its n resources exactly once.
func depCheckRanOnce(t *testing.T, r *depRig, id string, n int) {
	t.Helper()
	d := r.show(id)
	done := map[string]int{}
	for _, e := range d.Events {
		if e.LogicalID != "" && strings.HasSuffix(e.Status, "_COMPLETE") {
			done[e.LogicalID]++
		}
	}
	twice := 0
	for _, k := range done {
		if k > 1 {
			twice++
		}
	}
	if len(done) != n || twice > 0 {
		t.Errorf("deployment %s completed %d resources (%d of them more than once) in its events, want each of %d once: %v", id, len(done), twice, n, done)
	}
}

// TestDeploymentsKilledWaiter kills (SIGKILL) a `cdkx deploy --lock-timeout 5m` while it waits in the
// queue of stack Big behind a slow deploy (300 record sets through a proxy that holds every PowerDNS
// request for 40 ms), with another deploy waiting behind it, on each backend (the issue asks it of the
// server; the others share the contract): the killed one's deployment becomes ABORTED within the heartbeat
// timeout (10 s, plus a little), while the holder still runs, and the one behind it runs once the holder
// is done.
func TestDeploymentsKilledWaiter(t *testing.T) {
	depOnPDNS(t, depKilledWaiter)
}

func depKilledWaiter(t *testing.T, r *depRig, p pdns) {
	bin := r.bin
	zone := "depkill-" + r.backend + ".test."
	depFreshZone(t, p, zone)
	app := func(ttl int) string {
		var recs []depRecord
		for i := range depBigRecords {
			recs = append(recs, depRecord{id: fmt.Sprintf("BigRecord%03d%08X", i, i), name: fmt.Sprintf("r%03d.%s", i, zone),
				ttl: ttl, records: []string{fmt.Sprintf("127.0.%d.%d", i/250, i%250+1)}})
		}
		return depWriteZone(t, filepath.Join(r.dir, fmt.Sprintf("ttl%d", ttl)), "Big", zone, recs)
	}
	slow := svcNewFront(t, &svcServer{URL: p.apiURL})
	slow.setDelay(40 * time.Millisecond)

	start := time.Now()
	holder := svcStart(t, bin, r.dir, append(slices.Clone(r.env), "PDNS_API_URL="+slow.URL), "deploy", "--app", app(300), "--concurrency", "1")
	created := func() int { return depCountLines(holder.output(), "CREATE_COMPLETE", "PowerDNS::DNS::RecordSet") }
	if !depUntil(time.Minute, func() bool { return created() >= 5 }) {
		code, out := holder.wait(time.Second)
		t.Fatalf("the holder's deploy did not create 5 record sets within a minute (exit %d):\n%s", code, out)
	}
	notice := regexp.MustCompile(`for the turn of deployment (\S+) in the queue of stack Big: position (\d+)`)
	startWaiter := func(ttl int) (*svcLive, string) {
		t.Helper()
		l := svcStart(t, bin, r.dir, r.env, "deploy", "--app", app(ttl), "--lock-timeout", "5m")
		var id string
		if !depUntil(30*time.Second, func() bool {
			m := notice.FindStringSubmatch(l.output())
			if m != nil {
				id = m[1]
			}
			return m != nil
		}) {
			code, out := l.wait(time.Second)
			t.Fatalf("deploy ttl %d did not wait in the queue of Big within 30 s (exit %d):\n%s", ttl, code, out)
		}
		return l, id
	}
	waiter, waiterID := startWaiter(301)
	behind, behindID := startWaiter(302)
	if d := r.show(waiterID); d.Status != "PENDING" {
		t.Fatalf("the waiting deployment %s is %s, want PENDING", waiterID, d.Status)
	}
	if err := waiter.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	waiter.wait(time.Minute)
	t.Logf("killed the waiting deploy (pid %d, deployment %s) %s after the holder started, which had created %d of %d record sets",
		waiter.pid(), waiterID, killedAt.Sub(start).Round(time.Millisecond), created(), depBigRecords)
	select {
	case <-holder.done:
		t.Fatalf("the holder's deploy ended before the waiter was killed: the waiter was not waiting behind a running deployment")
	default:
	}

	// Poll until it is ABORTED, or the holder ended and 20 s more passed, to say when it was.
	var d depDeployment
	var holderEnded time.Time
	if !depUntil(3*time.Minute, func() bool {
		d = r.show(waiterID)
		if holderEnded.IsZero() {
			select {
			case <-holder.done:
				holderEnded = time.Now()
			default:
			}
		}
		return d.Status == "ABORTED" || !holderEnded.IsZero() && time.Since(holderEnded) > 20*time.Second
	}) || d.Status != "ABORTED" {
		t.Fatalf("the killed waiter's deployment %s is still %s %s after the kill (the holder ended %s after it), want ABORTED",
			waiterID, d.Status, time.Since(killedAt).Round(time.Millisecond), holderEnded.Sub(killedAt).Round(time.Millisecond))
	}
	abortedIn := time.Since(killedAt)
	holderRunning := holderEnded.IsZero()
	t.Logf("the killed waiter's deployment became ABORTED %s after the kill (the holder still running: %t): %s", abortedIn.Round(time.Millisecond), holderRunning, d.Error)
	if abortedIn > 15*time.Second {
		t.Errorf("the killed waiter's deployment became ABORTED %s after the kill, want within 15 s (heartbeat timeout 10 s); the holder ended %s after the kill",
			abortedIn.Round(time.Millisecond), holderEnded.Sub(killedAt).Round(time.Millisecond))
	}
	if !strings.Contains(d.Error, "heartbeat") {
		t.Errorf("the killed waiter's deployment ended with error %q, want one naming its missing heartbeat", d.Error)
	}
	if q := r.list("--stack", "Big", "--status", "PENDING,APPROVED,RUNNING"); holderRunning && (len(q) != 2 || q[0].ID != behindID) {
		t.Errorf("the queue of Big once the killed waiter is ABORTED is %+v, want the holder's deployment and %s", q, behindID)
	}

	if code, out := holder.wait(3 * time.Minute); code != 0 {
		t.Errorf("the holder's deploy exited %d:\n%s", code, out)
	}
	if code, out := behind.wait(2 * time.Minute); code != 0 {
		t.Fatalf("the deploy behind the killed waiter exited %d:\n%s", code, out)
	}
	t.Logf("the holder ended %s and the deploy behind the killed waiter %s after the kill",
		holder.ended().Sub(killedAt).Round(time.Millisecond), behind.ended().Sub(killedAt).Round(time.Millisecond))
	bd := r.show(behindID)
	if bd.Status != "COMPLETED" || bd.StartedAt == nil || d.FinishedAt == nil || bd.StartedAt.Before(*d.FinishedAt) {
		t.Errorf("the deployment behind the killed waiter is %s, started %v; want COMPLETED, started after the waiter was ABORTED at %v", bd.Status, bd.StartedAt, d.FinishedAt)
	}
	depStateMatchesPDNS(t, r, p, zone, "after the deploy behind the killed waiter")
	if ttl, _, ok := depRRSet(t, p, zone, "r299."+zone, "A"); !ok || ttl != 302 {
		t.Errorf("r299.%s has ttl %d (present %t), want 302 (the deploy that ran last)", zone, ttl, ok)
	}
	r.want(0, "destroy", "--force", "--app", app(302))
}

// TestDeploymentsServerApprover runs two CI jobs (tokens ci-a and ci-b) that propose changes of one stack
// at once and an approver (token alice) through two replicas: the records name who proposed and who
// approved; approving A runs it; B, planned before A moved the stack, is refused as stale; B proposed
// again is approved and runs.
func TestDeploymentsServerApprover(t *testing.T) {
	dbURL := postgrestest.FreshSchema(t)
	bin := svcBuild(t)
	tokens := map[string]string{}
	for _, name := range []string{"ci-a", "ci-b", "alice"} {
		res := svcExec(bin, t.TempDir(), svcClientEnv(""), "server", "token", "create", name, "--database-url", dbURL)
		if res.err != nil || res.code != 0 {
			t.Fatalf("cdkx server token create %s exited %d (%v):\n%s", name, res.code, res.err, res.output())
		}
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		tokens[name] = strings.TrimSpace(lines[len(lines)-1])
	}
	a, b := svcStartServer(t, bin, dbURL), svcStartServer(t, bin, dbURL)
	front := svcNewFront(t, a, b)
	dir := t.TempDir()
	as := func(name string) *depRig {
		return &depRig{t: t, bin: bin, dir: dir, backend: "server", state: front.URL, dbURL: dbURL,
			env: append(svcClientEnv(tokens[name]), "CDKX_STATE="+front.URL)}
	}
	ciA, ciB, alice := as("ci-a"), as("ci-b"), as("alice")
	app := func(value string) string {
		d := filepath.Join(dir, value)
		svcWriteAssembly(t, d, []string{"Team"}, 3, value)
		return filepath.Join(d, "cdkx.out")
	}
	ciA.want(0, "deploy", "--app", app("v0"))

	var pa, pb depRecorded
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for _, job := range []struct {
		r     *depRig
		value string
		out   *depRecorded
	}{{ciA, "a", &pa}, {ciB, "b", &pb}} {
		path := app(job.value)
		wg.Go(func() {
			res := svcExec(bin, dir, job.r.env, "deploy", "--app", path, "--propose", "--message", "set "+job.value, "--json")
			if res.err != nil || res.code != 0 || json.Unmarshal([]byte(res.stdout), job.out) != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("propose %s exited %d (%v):\n%s", job.value, res.code, res.err, res.output()))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(strings.Join(errs, "\n"))
	}
	proposed := alice.list("--status", "PROPOSED")
	by := map[string]string{}
	for _, d := range proposed {
		by[d.ID] = d.CreatedBy
	}
	if len(proposed) != 2 || by[pa.ID] != "ci-a" || by[pb.ID] != "ci-b" {
		t.Errorf("the approver lists PROPOSED %v (id → createdBy), want %s by ci-a and %s by ci-b", by, pa.ID, pb.ID)
	}

	alice.want(0, "deployments", "approve", pa.ID, "--run")
	if d := alice.show(pa.ID); d.Status != "COMPLETED" || d.CreatedBy != "ci-a" || d.ApprovedBy != "alice" {
		t.Errorf("proposal A after approve --run: %s, created by %q, approved by %q; want COMPLETED, by ci-a, approved by alice", d.Status, d.CreatedBy, d.ApprovedBy)
	}
	res := alice.run("deployments", "approve", pb.ID, "--run")
	if res.code != 1 || !strings.Contains(res.output(), "stale") {
		t.Errorf("approve --run of B, planned before A moved the stack, exited %d, want 1 with \"stale\":\n%s", res.code, res.output())
	}
	depCheckValue(t, svcExport(t, bin, dir, alice.env, front.URL)["Team"], "a", "after B was refused")

	again := ciB.record(app("b"), "--propose", "--message", "set b, again")
	alice.want(0, "deployments", "approve", again.ID, "--run")
	if d := alice.show(again.ID); d.Status != "COMPLETED" || d.CreatedBy != "ci-b" || d.ApprovedBy != "alice" {
		t.Errorf("B proposed again, after approve --run: %s, created by %q, approved by %q; want COMPLETED, by ci-b, approved by alice", d.Status, d.CreatedBy, d.ApprovedBy)
	}
	depCheckValue(t, svcExport(t, bin, dir, alice.env, front.URL)["Team"], "b", "after B proposed again ran")
}

// depCheckValue checks that every resource of st (svcWriteAssembly's) holds value.
func depCheckValue(t *testing.T, st *svcStackState, value, what string) {
	t.Helper()
	if st == nil || len(st.Resources) == 0 {
		t.Errorf("%s: the stack has no resources", what)
		return
	}
	for _, res := range st.Resources {
		if res.value() != value {
			t.Errorf("%s: %s holds %q, want %q", what, res.LogicalID, res.value(), value)
		}
	}
}

// --- sensitive values ---

// TestDeploymentsSecrets proposes the RabbitMQ example (its user's password is write-only) on each
// backend: without CDKX_SECRETS_PASSPHRASE the proposal is refused with a message naming it; with it the
// proposal is recorded and the password is nowhere in plain text (nor hex or base64) in the SQLite file or
// in any table of the database; approve --run without the passphrase fails naming it, and running the
// deployment with it creates the user at RabbitMQ with that password.
func TestDeploymentsSecrets(t *testing.T) {
	if os.Getenv("RABBITMQ_API_URL") == "" {
		t.Skip("RABBITMQ_API_URL is unset: start RabbitMQ with scripts/rmq-up.sh DIR")
	}
	bin := svcBuild(t)
	for _, backend := range depBackends {
		t.Run(backend, func(t *testing.T) {
			r := depOpen(t, bin, backend)
			name := "depsec-" + backend
			if err := rmqCleanup(name); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rmqCleanup(name) })
			var rnd [8]byte
			_, _ = rand.Read(rnd[:])
			password := "depsec-SECRET-" + hex.EncodeToString(rnd[:])
			vhost, user := "e2e-"+name, "svc-"+name
			app := depWriteMessaging(t, filepath.Join(r.dir, "messaging"), vhost, user, password)
			const passphrase = "e2e deployments passphrase"

			res := r.run("deploy", "--app", app, "--propose")
			t.Logf("propose without a passphrase: exit %d: %s", res.code, strings.TrimSpace(res.stderr))
			if res.code != 1 || !strings.Contains(res.output(), "CDKX_SECRETS_PASSPHRASE") {
				t.Errorf("deploy --propose of a password without CDKX_SECRETS_PASSPHRASE exited %d, want 1 naming CDKX_SECRETS_PASSPHRASE:\n%s", res.code, res.output())
			}
			if ds := r.list(); len(ds) != 0 {
				t.Errorf("the refused proposal left %d deployments recorded: %+v", len(ds), ds)
			}

			withPass := r.with("CDKX_SECRETS_PASSPHRASE=" + passphrase)
			pr := withPass.record(app, "--propose", "--message", "messaging")
			if pr.Status != "PROPOSED" || pr.Plan.Create == 0 {
				t.Errorf("deploy --propose with the passphrase printed %+v, want PROPOSED with creates", pr)
			}
			shown := withPass.want(0, "deployments", "show", pr.ID, "--json").stdout
			depNoSecret(t, r, password, "after the proposal", shown)

			res = r.run("deployments", "approve", pr.ID, "--run")
			t.Logf("approve --run without the passphrase: exit %d: %s", res.code, strings.TrimSpace(res.stderr))
			if res.code != 1 || !strings.Contains(res.output(), "CDKX_SECRETS_PASSPHRASE") {
				t.Errorf("approve --run of a sealed proposal without CDKX_SECRETS_PASSPHRASE exited %d, want 1 naming CDKX_SECRETS_PASSPHRASE:\n%s", res.code, res.output())
			}
			if code, _ := depRMQLogin(user, password); code == http.StatusOK {
				t.Errorf("user %s exists at RabbitMQ after a run refused for want of the passphrase", user)
			}
			if d := r.show(pr.ID); d.Status == "COMPLETED" || d.Status == "RUNNING" {
				t.Errorf("the deployment is %s after a run refused for want of the passphrase", d.Status)
			}

			// It is APPROVED now; run it with the passphrase.
			res = withPass.run("deployments", "run", pr.ID)
			if res.code != 0 {
				t.Fatalf("deployments run %s with the passphrase exited %d:\n%s", pr.ID, res.code, res.output())
			}
			if d := r.show(pr.ID); d.Status != "COMPLETED" {
				t.Errorf("the deployment is %s after it ran with the passphrase, want COMPLETED (error %q)", d.Status, d.Error)
			}
			if code, err := depRMQLogin(user, password); err != nil || code != http.StatusOK {
				t.Errorf("user %s cannot log in to RabbitMQ with the proposal's password after the run: %d %v", user, code, err)
			}
			depNoSecret(t, r, password, "after the run", res.output())
			r.want(0, "destroy", "--force", "--app", app)
		})
	}
}

// depWriteMessaging writes the RabbitMQ example (testdata/examples/messaging) under dir with its vhost,
// user and password replaced, and returns the assembly's path.
func depWriteMessaging(t *testing.T, dir, vhost, user, password string) string {
	t.Helper()
	src := filepath.Join("..", "testdata", "examples", "messaging", "cdkx.out")
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(src, "Messaging.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	resources, _ := tmpl["resources"].(map[string]any)
	users := 0
	for _, v := range resources {
		res, _ := v.(map[string]any)
		props, _ := res["properties"].(map[string]any)
		switch res["type"] {
		case "RabbitMQ::Broker::VirtualHost":
			props["name"] = vhost
		case "RabbitMQ::Access::User":
			props["name"], props["password"] = user, password
			users++
		}
	}
	if users != 1 {
		t.Fatalf("the messaging example has %d users, want 1", users)
	}
	b, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "Messaging.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// depSecretForms are the ways secret could appear in stored bytes: as is, hex (PostgreSQL's bytea text
// form), and base64 at each of the three alignments (whole groups only).
func depSecretForms(secret string) []string {
	forms := []string{secret, hex.EncodeToString([]byte(secret))}
	for off := range 3 {
		s := secret[off:]
		forms = append(forms, base64.StdEncoding.EncodeToString([]byte(s))[:4*(len(s)/3)])
	}
	return forms
}

// depNoSecret checks that secret is in none of outputs and nowhere in the backend's storage: the bytes of
// the SQLite file (and its -wal and -shm files), or every row of every table of the database's schema.
func depNoSecret(t *testing.T, r *depRig, secret, what string, outputs ...string) {
	t.Helper()
	forms := depSecretForms(secret)
	find := func(where, text string) {
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s: the password (as %q) is in %s", what, f, where)
				return
			}
		}
	}
	for i, o := range outputs {
		find(fmt.Sprintf("command output %d", i+1), o)
	}
	switch r.backend {
	case "sqlite":
		files, _ := filepath.Glob(r.state + "*")
		size := 0
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			size += len(b)
			find(filepath.Base(f), string(b))
		}
		t.Logf("%s: searched %d bytes of %d SQLite files for the password", what, size, len(files))
	default:
		db := svcConnect(t, r.dbURL)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rows, err := db.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		n, size := 0, 0
		for _, table := range tables {
			rows, err := db.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t`)
			if err != nil {
				t.Fatal(err)
			}
			texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				size += len(text)
				find("table "+table, text)
			}
			n += len(texts)
		}
		t.Logf("%s: searched %d rows (%d bytes) of %d tables for the password", what, n, size, len(tables))
		if len(tables) == 0 {
			t.Errorf("%s: the schema of %s has no tables to search", what, r.dbURL)
		}
	}
}

// depRMQLogin asks RabbitMQ's management API who user is (GET /api/whoami with password).
func depRMQLogin(user, password string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(os.Getenv("RABBITMQ_API_URL"), "/")+"/api/whoami", nil)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

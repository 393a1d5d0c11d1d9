//go:build e2e

package e2e

// The TestQueue* tests check a tidy deployment queue (issue 19, point 7) through the real cdkx binary on
// PowerDNS: no deployment for an unchanged stack, ID prefixes (an ambiguous one lists its matches), 4 KiB
// messages shown sanitized, the abort of one of two stacks' deployments, and an agent that recognizes a
// killed one at once. They need PowerDNS (PDNS_API_URL …) and, for the postgres and server backends,
// PostgreSQL (CDKX_TEST_POSTGRES_URL):
//
//	go test -tags e2e -run TestQueue -count=1 -v ./e2e/

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres"
	"github.com/cdkx-dev/cdkx/pkg/backend/service"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// queueStack is one stack of a queueWrite assembly: a zone and its A record sets.
type queueStack struct {
	name, zone string
	recs       []depRecord
}

// queueWrite writes DIR/cdkx.out with the stacks (each independent of the others) and returns its path.
func queueWrite(t *testing.T, dir string, stacks ...queueStack) string {
	t.Helper()
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	artifacts := map[string]any{}
	for _, s := range stacks {
		zoneID := s.name + "Zone5F3A9C21"
		resources := map[string]any{zoneID: map[string]any{"type": "PowerDNS::DNS::Zone", "provider": "powerdns",
			"properties": map[string]any{"name": s.zone, "kind": "Native", "nameservers": []string{"ns1." + s.zone}}}}
		for _, rec := range s.recs {
			resources[rec.id] = map[string]any{"type": "PowerDNS::DNS::RecordSet", "provider": "powerdns",
				"properties": map[string]any{"zoneId": map[string]any{"ref": zoneID, "attr": "zoneId"},
					"name": rec.name, "type": "A", "ttl": rec.ttl, "records": rec.records},
				"dependsOn": []string{zoneID}}
		}
		artifacts[s.name] = map[string]any{"type": "cdkx:stack", "properties": map[string]any{"templateFile": s.name + ".json"}}
		b, err := json.Marshal(map[string]any{"resources": resources})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, s.name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(map[string]any{"version": "1.0.0", "artifacts": artifacts})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// queueTwo writes, under r.dir/name, stacks A and B, each a zone with one record set www of ttl ttlA and
// ttlB.
func queueTwo(r *depRig, name string, ttlA, ttlB int) string {
	r.t.Helper()
	za, zb := "qa-"+r.backend+".test.", "qb-"+r.backend+".test."
	return queueWrite(r.t, filepath.Join(r.dir, name),
		queueStack{"A", za, []depRecord{{id: "AWwwRecordSet1E6C2A94", name: "www." + za, ttl: ttlA, records: []string{"127.0.0.10"}}}},
		queueStack{"B", zb, []depRecord{{id: "BWwwRecordSet1E6C2A94", name: "www." + zb, ttl: ttlB, records: []string{"127.0.0.11"}}}})
}

// queueBackend opens the rig's backend in this process (to store records the CLI would never make).
func queueBackend(t *testing.T, r *depRig) state.Backend {
	t.Helper()
	ctx := context.Background()
	var b state.Backend
	var err error
	switch r.backend {
	case "sqlite":
		b, err = sqlite.Open(ctx, r.state)
	case "postgres":
		b, err = postgres.Open(ctx, r.state)
	case "server":
		token := ""
		for _, kv := range r.env {
			if v, ok := strings.CutPrefix(kv, "CDKX_TOKEN="); ok {
				token = v
			}
		}
		b, err = service.Open(ctx, r.state, service.Options{Token: token, Project: svcProject})
	}
	if err != nil {
		t.Fatalf("open the %s backend: %v", r.backend, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// queueLines returns the JSON objects of stdout, one per line.
func queueLines(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestQueueTidy runs, on each backend: no deployment for unchanged stacks (propose, --no-wait, deploy),
// ID prefixes (short, unknown, ambiguous, unique), a 5 KiB message refused, and a message with an escape
// sequence, a forged line and a bidirectional override shown sanitized (text and JSON).
func TestQueueTidy(t *testing.T) {
	depOnPDNS(t, func(t *testing.T, r *depRig, p pdns) {
		depFreshZone(t, p, "qa-"+r.backend+".test.")
		depFreshZone(t, p, "qb-"+r.backend+".test.")
		queueTidy(t, r)
	})
}

func queueTidy(t *testing.T, r *depRig) {
	v1 := queueTwo(r, "v1", 300, 300)
	r.want(0, "deploy", "--app", v1)
	count := len(r.list())

	// Nothing changed: no deployment, a "no changes" line per stack, in text and JSON.
	res := r.want(0, "deploy", "--app", v1, "--propose", "--json")
	got := queueLines(t, res.stdout)
	want := []map[string]any{{"stack": "A", "noChanges": true}, {"stack": "B", "noChanges": true}}
	if depJSON(got) != depJSON(want) {
		t.Errorf("deploy --propose --json of an unchanged assembly printed %s, want %s", depJSON(got), depJSON(want))
	}
	res = r.want(0, "deploy", "--app", v1, "--propose")
	if !strings.Contains(res.stdout, "Stack A: no changes\n") || !strings.Contains(res.stdout, "Stack B: no changes\n") || strings.Contains(res.stdout, "PROPOSED") {
		t.Errorf("deploy --propose of an unchanged assembly printed:\n%s\nwant \"Stack A: no changes\" and \"Stack B: no changes\", no proposal", res.output())
	}
	r.want(0, "deploy", "--app", v1, "--no-wait")
	res = r.want(0, "deploy", "--app", v1)
	if !strings.Contains(res.stderr, "Stack A: no changes") || !strings.Contains(res.stderr, "Stack B: no changes") {
		t.Errorf("deploy of an unchanged assembly printed:\n%s\nwant a \"no changes\" line per stack", res.output())
	}
	if n := len(r.list()); n != count {
		t.Errorf("propose, --no-wait and deploy of an unchanged assembly recorded %d deployment(s), want none", n-count)
	}

	// B changed: one proposal, for B; A says no changes.
	v2 := queueTwo(r, "v2", 300, 120)
	got = queueLines(t, r.want(0, "deploy", "--app", v2, "--propose", "--json").stdout)
	if len(got) != 2 || got[0]["stack"] != "B" || got[0]["status"] != "PROPOSED" || got[1]["stack"] != "A" || got[1]["noChanges"] != true {
		t.Fatalf("deploy --propose --json with B changed printed %s, want B's proposal, then A with noChanges", depJSON(got))
	}
	id := got[0]["id"].(string)
	if n := len(r.list()); n != count+1 {
		t.Errorf("a proposal with one stack changed recorded %d deployments, want 1", n-count)
	}

	// Prefixes.
	if d := r.show(id[:8]); d.ID != id {
		t.Errorf("show %s (a prefix of %s) showed %s", id[:8], id, d.ID)
	}
	res = r.want(1, "deployments", "show", id[:5])
	if !strings.Contains(res.stderr, "at least 6 characters") {
		t.Errorf("show with a 5-character prefix: %s; want an error saying at least 6 characters", res.stderr)
	}
	res = r.want(1, "deployments", "show", "zzzzzzzz")
	if !strings.Contains(res.stderr, `no deployment "zzzzzzzz"`) {
		t.Errorf("show of an unknown prefix: %s; want no deployment", res.stderr)
	}
	b := queueBackend(t, r)
	twins := []string{"abcdef01-0000-4000-8000-000000000001", "abcdef02-0000-4000-8000-000000000002"}
	var ds []*state.Deployment
	for _, tid := range twins {
		ds = append(ds, &state.Deployment{ID: tid, Stack: "A", Kind: state.KindDeploy, Status: state.StatusProposed,
			CreatedBy: "e2e", Message: "twin " + tid, Plan: &state.Plan{Steps: []state.PlanStep{}}})
	}
	if err := b.CreateDeployments(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", "abcdef"}, {"reject", "abcdef0"}, {"approve", "abcdef"}, {"abort", "abcdef"}} {
		res = r.want(1, append([]string{"deployments"}, args...)...)
		if !strings.Contains(res.stderr, "is ambiguous") || !strings.Contains(res.stderr, twins[0]) || !strings.Contains(res.stderr, twins[1]) {
			t.Errorf("deployments %s: %s; want \"is ambiguous\" listing %s and %s", strings.Join(args, " "), res.stderr, twins[0], twins[1])
		}
	}
	r.want(0, "deployments", "reject", "abcdef02")
	if d := r.show(twins[1]); d.Status != "REJECTED" {
		t.Errorf("after reject abcdef02: %s is %s, want REJECTED", twins[1], d.Status)
	}
	if d := r.show(twins[0]); d.Status != "PROPOSED" {
		t.Errorf("after reject abcdef02: %s is %s, want PROPOSED still", twins[0], d.Status)
	}

	// A 5 KiB message: the CLI refuses it before planning, and every backend refuses to store it.
	big := strings.Repeat("m", 5<<10)
	res = r.want(1, "deploy", "--app", queueTwo(r, "v3", 200, 120), "--propose", "--message", big)
	if !strings.Contains(res.stderr, "at most 4096 (4 KiB)") {
		t.Errorf("deploy --propose with a 5 KiB message: %s; want it refused (4 KiB)", res.stderr)
	}
	err := b.CreateDeployments(context.Background(), []*state.Deployment{{ID: "5c1b0000-0000-4000-8000-000000000005", Stack: "A",
		Kind: state.KindDeploy, Status: state.StatusProposed, Message: big}})
	if err == nil || !strings.Contains(err.Error(), "4 KiB") {
		t.Errorf("the %s backend stored a 5 KiB message: %v; want it refused", r.backend, err)
	}

	// A hostile message is shown sanitized; --json escapes the bidirectional override.
	hostile := "lower the TTL\x1b[31m\nApproved by:  mallory@ops\u202e"
	got = queueLines(t, r.want(0, "deploy", "--app", queueTwo(r, "v4", 200, 120), "--propose", "--json", "--message", hostile).stdout)
	hid := got[0]["id"].(string)
	show := r.want(0, "deployments", "show", hid).stdout
	if strings.ContainsAny(show, "\x1b\u202e") || !strings.Contains(show, `lower the TTL\x1b[31m\nApproved by:  mallory@ops\u202e`) {
		t.Errorf("deployments show printed the message raw, want it sanitized:\n%q", show)
	}
	for _, l := range strings.Split(show, "\n") {
		if strings.HasPrefix(l, "Approved by:") {
			t.Errorf("deployments show printed a forged line %q", l)
		}
	}
	list := r.want(0, "deployments", "list").stdout
	if strings.ContainsAny(list, "\x1b\u202e") || !strings.Contains(list, `lower the TTL\x1b[31m`) {
		t.Errorf("deployments list printed the message raw or not at all:\n%q", list)
	}
	js := r.want(0, "deployments", "show", hid, "--json").stdout
	if strings.ContainsRune(js, '\u202e') || !strings.Contains(js, `\u202e`) {
		t.Errorf("deployments show --json did not escape U+202E as \\u202e:\n%s", js)
	}
	if d := r.show(hid); d.Message != hostile {
		t.Errorf("show --json message = %q, want %q (escaped, not changed)", d.Message, hostile)
	}

	// The proposal for B, approved and run by a prefix.
	r.want(0, "deployments", "approve", id[:10], "--run")
	if d := r.show(id); d.Status != "COMPLETED" {
		t.Errorf("approve %s --run: %s is %s (%s), want COMPLETED", id[:10], id, d.Status, d.Error)
	}

	// Redeploying what B already is proposes nothing; redeploying its first deploy proposes the way back.
	count = len(r.list())
	res = r.want(0, "deployments", "redeploy", id[:8])
	if strings.TrimSpace(res.stdout) != "Stack B: no changes" || len(r.list()) != count {
		t.Errorf("redeploy of the deployment B is at printed %q and recorded %d, want \"Stack B: no changes\" and nothing", res.stdout, len(r.list())-count)
	}
	bs := r.list("--stack", "B", "--status", "COMPLETED")
	back := queueLines(t, r.want(0, "deployments", "redeploy", bs[len(bs)-1].ID[:8], "--json").stdout)
	if len(back) != 1 || back[0]["status"] != "PROPOSED" || back[0]["stack"] != "B" {
		t.Errorf("redeploy of B's first deploy printed %s, want one PROPOSED deployment of B", depJSON(back))
	}
}

// TestQueueAbortOneOfTwo deploys stacks Big (120 record sets) and Small (30), independent, in one run
// through a proxy that slows PowerDNS down, and aborts Big's deployment mid-run: Big ends ABORTED, Small
// COMPLETED with all its record sets, the run says "Deployment ID aborted by WHO" (not the Ctrl-C notice)
// and exits 130; the next deploy converges.
func TestQueueAbortOneOfTwo(t *testing.T) {
	p := depPDNS(t)
	bin := svcBuild(t)
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			r := depOpen(t, bin, backend)
			r = r.with("PDNS_API_URL="+p.apiURL, "PDNS_API_KEY="+p.apiKey, "PDNS_SERVER_ID="+p.serverID)
			bigZone, smallZone := "qbig-"+backend+".test.", "qsmall-"+backend+".test."
			depFreshZone(t, p, bigZone)
			depFreshZone(t, p, smallZone)
			recs := func(zone, prefix string, n int) []depRecord {
				var out []depRecord
				for i := range n {
					out = append(out, depRecord{id: fmt.Sprintf("%sRecord%03d%08X", prefix, i, i), name: fmt.Sprintf("r%03d.%s", i, zone),
						ttl: 300, records: []string{fmt.Sprintf("127.0.%d.%d", i/250, i%250+1)}})
				}
				return out
			}
			app := queueWrite(t, filepath.Join(r.dir, "two"), queueStack{"Big", bigZone, recs(bigZone, "Big", 120)},
				queueStack{"Small", smallZone, recs(smallZone, "Small", 30)})
			slow := svcNewFront(t, &svcServer{URL: p.apiURL})
			slow.setDelay(30 * time.Millisecond)
			live := svcStart(t, r.bin, r.dir, append(slices.Clone(r.env), "PDNS_API_URL="+slow.URL), "deploy", "--app", app, "--concurrency", "2")
			created := func() int { return depCountLines(live.output(), "CREATE_COMPLETE", "Big", "PowerDNS::DNS::RecordSet") }
			if !depUntil(time.Minute, func() bool { return created() >= 5 }) {
				code, out := live.wait(time.Second)
				t.Fatalf("the deploy did not create 5 record sets of Big within a minute (exit %d):\n%s", code, out)
			}
			running := r.list("--stack", "Big", "--status", "RUNNING")
			if len(running) != 1 {
				t.Fatalf("stack Big has %d RUNNING deployments while its deploy runs, want 1", len(running))
			}
			big := running[0].ID
			r.want(0, "deployments", "abort", big[:8])
			code, out := live.wait(2 * time.Minute)
			if code != 130 {
				t.Errorf("the deploy with Big's deployment aborted exited %d, want 130:\n%s", code, out)
			}
			if !strings.Contains(out, "Deployment "+big+" aborted by ") || strings.Contains(out, "Press Ctrl-C again") {
				t.Errorf("the deploy's output does not say \"Deployment %s aborted by …\", or says the Ctrl-C notice:\n%s", big, out)
			}
			if n := created(); n >= 120 {
				t.Errorf("Big created %d of 120 record sets after its deployment was aborted: it did not stop", n)
			}
			if d := r.show(big); d.Status != "ABORTED" || d.AbortedBy == "" {
				t.Errorf("Big's deployment %s is %s (aborted by %q), want ABORTED by someone", big, d.Status, d.AbortedBy)
			}
			small := r.list("--stack", "Small")
			if len(small) != 1 || small[0].Status != "COMPLETED" {
				t.Fatalf("Small's deployments: %+v; want one, COMPLETED (an abort of Big's ends only Big's)", small)
			}
			z, err := p.zone(smallZone)
			n := 0
			if err == nil && z != nil {
				for _, rr := range z.RRSets {
					if rr.Type == "A" {
						n++
					}
				}
			}
			if n != 30 {
				t.Errorf("PowerDNS holds %d A record sets of Small (%v), want 30", n, err)
			}
			t.Logf("Big aborted after %d record sets; Small completed with %d", created(), n)
			r.want(0, "deploy", "--app", app)
			r.want(0, "diff", "--app", app, "--detailed-exitcode")
			r.want(0, "destroy", "--force", "--app", app)
		})
	}
}

// TestQueueKilledAgent kills an agent (SIGKILL) while it runs a deployment through a slow PowerDNS, with
// a second deployment queued behind it: the next `agent --once`, started at once, records the killed
// run's deployment ABORTED (its process is gone) and runs the second one, instead of reporting "no
// deployment left to run" until the heartbeat is 10 s old.
func TestQueueKilledAgent(t *testing.T) {
	p := depPDNS(t)
	bin := svcBuild(t)
	r := depOpen(t, bin, "sqlite")
	r = r.with("PDNS_API_URL="+p.apiURL, "PDNS_API_KEY="+p.apiKey, "PDNS_SERVER_ID="+p.serverID)
	zone := "qagent.test."
	depFreshZone(t, p, zone)
	write := func(name string, ttl, n int) string {
		var recs []depRecord
		for i := range n {
			recs = append(recs, depRecord{id: fmt.Sprintf("Record%03d%08X", i, i), name: fmt.Sprintf("r%03d.%s", i, zone),
				ttl: ttl, records: []string{fmt.Sprintf("127.0.0.%d", i+1)}})
		}
		return queueWrite(t, filepath.Join(r.dir, name), queueStack{"Agent", zone, recs})
	}
	first := queueLines(t, r.want(0, "deploy", "--app", write("first", 300, 60), "--no-wait", "--json").stdout)[0]["id"].(string)
	second := queueLines(t, r.want(0, "deploy", "--app", write("second", 120, 60), "--no-wait", "--json").stdout)[0]["id"].(string)

	slow := svcNewFront(t, &svcServer{URL: p.apiURL})
	slow.setDelay(50 * time.Millisecond)
	agent := svcStart(t, r.bin, r.dir, append(slices.Clone(r.env), "PDNS_API_URL="+slow.URL), "agent", "--once", "--concurrency", "1")
	if !depUntil(time.Minute, func() bool { return depCountLines(agent.output(), "CREATE_COMPLETE", "PowerDNS::DNS::RecordSet") >= 3 }) {
		code, out := agent.wait(time.Second)
		t.Fatalf("the agent did not create 3 record sets within a minute (exit %d):\n%s", code, out)
	}
	if err := syscall.Kill(agent.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	agent.wait(10 * time.Second)
	killedAt := time.Now()
	res := r.want(0, "agent", "--once")
	t.Logf("agent --once after the kill: %s in %s:\n%s", "exit 0", res.took.Round(time.Millisecond), res.stderr)
	if strings.Contains(res.stderr, "ran 0,") {
		t.Errorf("agent --once right after the kill ran nothing (%s after it):\n%s", time.Since(killedAt).Round(time.Millisecond), res.output())
	}
	if d := r.show(first); d.Status != "ABORTED" || !strings.Contains(d.Error, "is gone") {
		t.Errorf("the killed agent's deployment %s is %s (%q), want ABORTED saying its process is gone", first, d.Status, d.Error)
	}
	if d := r.show(second); d.Status != "COMPLETED" {
		t.Errorf("the deployment queued behind it, %s, is %s (%q), want COMPLETED", second, d.Status, d.Error)
	}
	r.want(0, "destroy", "--force", "--app", write("second", 120, 60))
}

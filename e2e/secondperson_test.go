//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/pkg/backend/postgres/postgrestest"
)

// TestDeploymentsSecondPerson runs the second-person rule on each backend (cdkx.json's
// "approval": {"requireSecondPerson": true} on SQLite and PostgreSQL, `cdkx server --require-second-person`):
// a change enters only as a proposal (deploy and deploy --no-wait exit 1, saying to propose it, and
// PowerDNS never sees the zone), the proposer cannot approve it, and on the server another token can.
//
//	go test -tags e2e -run TestDeploymentsSecondPerson -count=1 -v ./e2e/
func TestDeploymentsSecondPerson(t *testing.T) {
	p := depPDNS(t)
	bin := svcBuild(t)
	for _, backend := range depBackends {
		t.Run(backend, func(t *testing.T) {
			var alice, bob *depRig
			if backend == "server" {
				dbURL := postgrestest.FreshSchema(t)
				srv := svcStartServer(t, bin, dbURL, "--require-second-person")
				as := func(name string) *depRig {
					r := &depRig{t: t, bin: bin, dir: t.TempDir(), backend: backend, state: srv.URL, dbURL: dbURL}
					tok := svcExec(bin, t.TempDir(), svcClientEnv(""), "server", "token", "create", name, "--database-url", dbURL)
					if tok.err != nil || tok.code != 0 {
						t.Fatalf("cdkx server token create %s exited %d (%v):\n%s", name, tok.code, tok.err, tok.output())
					}
					lines := strings.Split(strings.TrimSpace(tok.stdout), "\n")
					r.env = append(svcClientEnv(strings.TrimSpace(lines[len(lines)-1])), "CDKX_STATE="+srv.URL)
					return r
				}
				alice, bob = as("alice"), as("bob")
			} else {
				alice = depOpen(t, bin, backend)
				if err := os.WriteFile(filepath.Join(alice.dir, "cdkx.json"), []byte(`{"approval": {"requireSecondPerson": true}}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pdnsEnv := []string{"PDNS_API_URL=" + p.apiURL, "PDNS_API_KEY=" + p.apiKey, "PDNS_SERVER_ID=" + p.serverID}
			alice = alice.with(pdnsEnv...)
			zone := "second-" + backend + ".test."
			depFreshZone(t, p, zone)
			app := depWriteZone(t, filepath.Join(alice.dir, "v1"), "Dns", zone, []depRecord{
				{id: depWww, name: "www." + zone, ttl: 300, records: []string{"127.0.0.10"}},
			})

			for _, args := range [][]string{{"deploy", "--app", app}, {"deploy", "--app", app, "--no-wait"}} {
				res := alice.want(1, args...)
				if !strings.Contains(res.stderr, "cdkx deploy --propose") || !strings.Contains(res.stderr, "second person") {
					t.Errorf("cdkx %s under the second-person rule: exit 1 without saying to propose it:\n%s", strings.Join(args, " "), res.output())
				}
				t.Logf("cdkx %s: exit 1: %s", strings.Join(args, " "), strings.TrimSpace(res.stderr))
				if ok, err := p.zoneExists(zone); err != nil || ok {
					t.Fatalf("after cdkx %s: zone %s exists at PowerDNS (%v)", strings.Join(args, " "), zone, err)
				}
			}
			pr := alice.record(app, "--propose")
			res := alice.want(1, "deployments", "approve", pr.ID)
			t.Logf("the proposer approves: exit 1: %s", strings.TrimSpace(res.stderr))
			if !strings.Contains(res.stderr, "second person") {
				t.Errorf("the proposer approving her own proposal: exit 1 without naming the rule:\n%s", res.output())
			}
			if d := alice.show(pr.ID); d.Status != "PROPOSED" || d.ApprovedBy != "" {
				t.Errorf("after the proposer's approval: %s, approved by %q; want PROPOSED, by nobody", d.Status, d.ApprovedBy)
			}
			if bob == nil {
				return // one OS user: a second person's approval on SQLite and PostgreSQL is the contract tests'
			}
			bob = bob.with(pdnsEnv...)
			bob.want(0, "deployments", "approve", pr.ID, "--run")
			if d := bob.show(pr.ID); d.Status != "COMPLETED" || d.CreatedBy != "alice" || d.ApprovedBy != "bob" {
				t.Errorf("after bob's approve --run: %s, created by %q, approved by %q; want COMPLETED, alice, bob", d.Status, d.CreatedBy, d.ApprovedBy)
			}
			if ok, err := p.zoneExists(zone); err != nil || !ok {
				t.Errorf("after bob's approve --run: zone %s absent at PowerDNS (%v)", zone, err)
			}
		})
	}
}

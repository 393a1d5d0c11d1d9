//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", to edit the state file as an attacker would

	"github.com/cdkx-dev/cdkx/internal/server"
)

// TestDeploymentsTampered changes an approved deployment's snapshot behind cdkx's back, on each backend,
// and checks that running it is refused as tampered (exit 1) before any provider call: PowerDNS never
// sees the zone.
//
//   - sqlite, postgres: the row of the approved proposal gets the snapshot of another proposal (one that
//     also creates a record set nobody reviewed), written with SQL into the state file or the schema; its
//     recorded hash no longer matches. `deployments run`, `run --replan` and `cdkx agent --once` refuse it.
//   - server: a client sends a record with a genuine plan (of the reviewed assembly) and the other
//     snapshot. Naming the plan's own snapshot, it is refused at once (400); lying about it, it is stored,
//     approved, and its run refuses it: the plan made from the snapshot is not the approved one.
//
// It needs PowerDNS and PostgreSQL (see TestDeploymentsScenario):
//
//	go test -tags e2e -run TestDeploymentsTampered -count=1 -v ./e2e/
func TestDeploymentsTampered(t *testing.T) {
	depOnPDNS(t, func(t *testing.T, r *depRig, p pdns) {
		backend := r.backend
		zone := "tamper-" + backend + ".test."
		depFreshZone(t, p, zone)
		reviewed := depWriteZone(t, filepath.Join(r.dir, "reviewed"), "Dns", zone, []depRecord{
			{id: depWww, name: "www." + zone, ttl: 300, records: []string{"127.0.0.10"}},
		})
		evil := depWriteZone(t, filepath.Join(r.dir, "evil"), "Dns", zone, []depRecord{
			{id: depWww, name: "www." + zone, ttl: 300, records: []string{"127.0.0.66"}},
			{id: depAPI, name: "evil." + zone, ttl: 300, records: []string{"127.0.0.66"}},
		})
		pr := r.record(reviewed, "--propose", "--message", "create www")
		other := r.record(evil, "--propose", "--message", "the snapshot an attacker swaps in")
		if backend == "server" {
			pr.ID = tamperThroughAPI(t, r, pr.ID, other.ID)
		}
		r.want(0, "deployments", "approve", pr.ID)
		if backend != "server" {
			tamperRow(t, r, pr.ID, other.ID)
		}

		runs := [][]string{{"deployments", "run", pr.ID}, {"deployments", "run", pr.ID, "--replan"}}
		if backend == "server" {
			// The snapshot matches its hash: the run claims it, plans, refuses and records it FAILED.
			runs = runs[:1]
		}
		for _, args := range runs {
			res := r.want(1, args...)
			if !strings.Contains(res.stderr, "tampered") {
				t.Errorf("cdkx %s: exit 1 without saying tampered:\n%s", strings.Join(args, " "), res.output())
			}
			if backend == "server" && !strings.Contains(res.stderr, "Dns/"+depAPI+": not in the approved plan") {
				t.Errorf("cdkx %s: the refusal does not list the step nobody reviewed:\n%s", strings.Join(args, " "), res.output())
			}
			if backend == "server" && !strings.Contains(res.stderr, `approved ["127.0.0.10"], now ["127.0.0.66"]`) {
				t.Errorf("cdkx %s: the refusal does not name www's changed address:\n%s", strings.Join(args, " "), res.output())
			}
			t.Logf("cdkx %s: exit 1: %s", strings.Join(args, " "), strings.TrimSpace(res.stderr))
			if ok, err := p.zoneExists(zone); err != nil || ok {
				t.Fatalf("after cdkx %s: zone %s exists at PowerDNS (%v): a provider was called", strings.Join(args, " "), zone, err)
			}
		}
		if backend != "server" {
			// Refused before its claim, it is still APPROVED: an agent claims it, refuses it, records it FAILED.
			res := r.run("agent", "--once")
			t.Logf("cdkx agent --once: exit %d:\n%s", res.code, res.output())
		}
		d := r.show(pr.ID)
		if d.Status != "FAILED" || !strings.Contains(d.Error, "tampered") {
			t.Errorf("after the runs: %s is %s (%q), want FAILED as tampered", pr.ID, d.Status, d.Error)
		}
		if ok, err := p.zoneExists(zone); err != nil || ok {
			t.Errorf("after cdkx agent --once: zone %s exists at PowerDNS (%v): a provider was called", zone, err)
		}
	})
}

// tamperRow writes, with SQL, the snapshot of deployment from into the row of deployment id (the SQLite
// file, or the PostgreSQL schema), leaving its recorded hash as it was.
func tamperRow(t *testing.T, r *depRig, id, from string) {
	t.Helper()
	const q = `UPDATE deployment_payloads SET snapshot = (SELECT p.snapshot FROM deployment_payloads AS p WHERE p.id = $1) WHERE id = $2`
	switch r.backend {
	case "sqlite":
		db, err := sql.Open("sqlite", r.state)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		res, err := db.Exec(q, from, id)
		if err != nil {
			t.Fatalf("tamper with %s: %v", r.state, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("tamper with %s: %d rows changed, want 1", r.state, n)
		}
	case "postgres":
		tag, err := svcConnect(t, r.dbURL).Exec(context.Background(), q, from, id)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("tamper with the schema: %v, %d rows changed, want 1", err, tag.RowsAffected())
		}
	}
}

// tamperThroughAPI creates, through the server's API as a client would, a proposal with the genuine plan
// of deployment reviewed and the snapshot of deployment from, and returns its ID. A record whose plan
// names its own snapshot (another than the one sent) is refused first, with 400.
func tamperThroughAPI(t *testing.T, r *depRig, reviewed, from string) string {
	t.Helper()
	token := ""
	for _, kv := range r.env {
		if v, ok := strings.CutPrefix(kv, "CDKX_TOKEN="); ok {
			token = v
		}
	}
	base := fmt.Sprintf("%s/api/cdkx/%s/%s/deployments", r.state, server.DefaultOrganization, svcProject)
	call := func(method, url string, body any) (int, []byte) {
		t.Helper()
		var in io.Reader
		if body != nil {
			data, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			in = bytes.NewReader(data)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, in)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "token "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	get := func(id string) map[string]any {
		t.Helper()
		code, body := call("GET", base+"/"+id, nil)
		var d map[string]any
		if code != 200 || json.Unmarshal(body, &d) != nil {
			t.Fatalf("GET deployment %s = %d %s", id, code, body)
		}
		return d
	}
	genuine, swapped := get(reviewed), get(from)
	snapshot, _ := swapped["snapshot"].(string) // base64, as encoding/json writes []byte
	plan, _ := genuine["plan"].(map[string]any)
	if snapshot == "" || plan == nil {
		t.Fatalf("deployments %s and %s: want a snapshot and a plan, got %v and %v", from, reviewed, swapped["snapshot"], genuine["plan"])
	}
	record := map[string]any{"id": uuid.NewString(), "stack": "Dns", "kind": "deploy", "status": "PROPOSED",
		"message": "create www (really)", "cdkxVersion": genuine["cdkxVersion"], "snapshot": snapshot, "plan": plan,
		"stateVersion": genuine["stateVersion"], "version": genuine["version"]}
	code, body := call("POST", base, map[string]any{"deployments": []any{record}})
	if code != http.StatusBadRequest || !strings.Contains(string(body), "its plan was made from snapshot") {
		t.Errorf("POST a record whose plan names another snapshot than the one sent = %d %s, want 400", code, body)
	}
	// A lying client names the snapshot it sends in the genuine plan: the server cannot plan, and stores it.
	raw, err := jsonBase64(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	plan["snapshotHash"] = hex.EncodeToString(sum[:])
	record["id"] = uuid.NewString()
	if code, body := call("POST", base, map[string]any{"deployments": []any{record}}); code != 200 {
		t.Fatalf("POST a record with a genuine plan and another snapshot = %d %s, want 200", code, body)
	}
	if got := get(record["id"].(string)); got["snapshotHash"] != plan["snapshotHash"] {
		t.Errorf("the server recorded snapshotHash %v, want the hash of the snapshot sent, %v", got["snapshotHash"], plan["snapshotHash"])
	}
	return record["id"].(string)
}

// jsonBase64 decodes a []byte as encoding/json writes it.
func jsonBase64(s string) ([]byte, error) {
	var b []byte
	err := json.Unmarshal([]byte(`"`+s+`"`), &b)
	return b, err
}

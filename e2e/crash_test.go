//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// TestKillNineConverges deploys a zone with 199 record sets and kills cdkx with SIGKILL at several points
// of the run. Each next deploy takes the dead process's lock over, settles the operations it left pending
// by reading PowerDNS, and goes on; after the last one, PowerDNS holds exactly the 199 record sets state
// records — no duplicate, no orphan — and nothing is pending.
func TestKillNineConverges(t *testing.T) {
	p := pdns{apiURL: os.Getenv("PDNS_API_URL"), apiKey: envOr("PDNS_API_KEY", "e2e-key"),
		serverID: envOr("PDNS_SERVER_ID", "localhost"), dnsPort: envOr("PDNS_DNS_PORT", "15353")}
	if p.apiURL == "" {
		t.Skip("PDNS_API_URL is unset: start PowerDNS with scripts/pdns-up.sh DIR")
	}
	const zone, records = "crash.test.", 199
	bin := filepath.Join(t.TempDir(), "cdkx")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", bin, "./cmd/cdkx")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if ok, _ := p.zoneExists(zone); ok {
		if err := p.deleteZone(zone); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = p.deleteZone(zone) })
	dir := t.TempDir()
	writeCrashAssembly(t, dir, zone, records)
	env := append(os.Environ(), "CI=true", "PDNS_API_URL="+p.apiURL, "PDNS_API_KEY="+p.apiKey, "PDNS_SERVER_ID="+p.serverID)
	run := func(args ...string) (int, string) {
		cmd := exec.CommandContext(context.Background(), bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // exec returns it unwrapped
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}

	settled := 0
	// Each run is killed right after its k-th CREATE_IN_PROGRESS event (emitted once the pending record is
	// durable, while the provider call runs), so every kill lands in the middle of a provider call or just
	// after it, at a different point of the deploy.
	for i, k := range []int{2, 8, 20, 35, 50} {
		cmd := exec.CommandContext(context.Background(), bin, "deploy", "--concurrency", "1")
		cmd.Dir, cmd.Env = dir, env
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		sc := bufio.NewScanner(stderr)
		seen := 0
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "CREATE_IN_PROGRESS") && strings.Contains(sc.Text(), "RecordSet") {
				if seen++; seen == k {
					_ = cmd.Process.Signal(syscall.SIGKILL)
					break
				}
			}
		}
		_ = cmd.Wait()
		delay := fmt.Sprintf("%d record set creates started", seen)
		exported := exportState(t, run)
		pending := 0
		for _, r := range exported {
			if r.Pending != nil {
				pending++
			}
		}
		t.Logf("kill %d after %s: %d resources recorded, %d with a pending operation", i+1, delay, len(exported), pending)
		if strings.Contains(out.String(), "Deploy complete") || seen < k {
			t.Logf("kill %d came after the deploy completed", i+1)
		}
		if i > 0 && !strings.Contains(out.String(), "Took over the lock of stack Crash") && strings.Contains(out.String(), "CREATE_") {
			t.Errorf("deploy %d did not take over the lock its killed predecessor held:\n%s", i+1, out.String())
		}
		// The next deploy starts by taking the lock over and settling; kill it again right away on the
		// next round, except that its settling output is checked here on a short run of its own.
		code, text := run("diff")
		if code != 0 {
			t.Fatalf("diff after kill %d exited %d:\n%s", i+1, code, text)
		}
		if pending > 0 && !strings.Contains(text, "left pending by an interrupted run") {
			t.Errorf("diff after kill %d does not mention the %d pending operations:\n%s", i+1, pending, text)
		}
		if pending > 0 {
			settled++
		}
	}
	code, text := run("deploy", "--concurrency", "4")
	if code != 0 {
		t.Fatalf("final deploy exited %d:\n%s", code, text)
	}
	if !strings.Contains(text, "Took over the lock") {
		t.Errorf("the final deploy did not take over the lock of the last killed run:\n%s", text)
	}
	t.Logf("kills that left pending operations: %d of 5", settled)
	if settled < 3 {
		t.Errorf("only %d kills left a pending operation; the test needs at least 3 to mean something", settled)
	}

	// PowerDNS holds exactly what state records.
	z, err := p.zone(zone)
	if err != nil || z == nil {
		t.Fatalf("zone %s: %v", zone, err)
	}
	var live []string
	for _, rr := range z.RRSets {
		if rr.Type == "A" {
			live = append(live, rr.Name)
		}
	}
	sort.Strings(live)
	exported := exportState(t, run)
	var recorded []string
	for _, r := range exported {
		if r.Pending != nil {
			t.Errorf("%s still pending after the final deploy", r.LogicalID)
		}
		if r.Type == "PowerDNS::DNS::RecordSet" {
			parts := strings.Split(r.PhysicalID, "/")
			recorded = append(recorded, parts[1])
		}
	}
	sort.Strings(recorded)
	if len(live) != records || len(recorded) != records {
		t.Errorf("PowerDNS holds %d A record sets and state %d, want %d each", len(live), len(recorded), records)
	}
	if strings.Join(live, ",") != strings.Join(recorded, ",") {
		t.Errorf("PowerDNS and state disagree:\nlive     %v\nrecorded %v", live, recorded)
	}
	if code, text := run("destroy", "--force"); code != 0 {
		t.Fatalf("destroy exited %d:\n%s", code, text)
	}
	if ok, _ := p.zoneExists(zone); ok {
		t.Errorf("zone %s still exists after destroy", zone)
	}
}

type exportedResource struct {
	LogicalID  string          `json:"logicalId"`
	Type       string          `json:"type"`
	PhysicalID string          `json:"physicalId"`
	Pending    json.RawMessage `json:"pending"`
}

func exportState(t *testing.T, run func(...string) (int, string)) []exportedResource {
	t.Helper()
	code, text := run("state", "export")
	if code != 0 {
		t.Fatalf("state export exited %d: %s", code, text)
	}
	var all struct {
		Stacks []struct {
			Resources []exportedResource `json:"resources"`
		} `json:"stacks"`
	}
	if err := json.Unmarshal([]byte(text), &all); err != nil {
		t.Fatalf("state export: %v\n%s", err, text)
	}
	var out []exportedResource
	for _, s := range all.Stacks {
		out = append(out, s.Resources...)
	}
	return out
}

func writeCrashAssembly(t *testing.T, dir, zone string, records int) {
	t.Helper()
	resources := map[string]any{
		"CrashZone5F3A9C21": map[string]any{"type": "PowerDNS::DNS::Zone", "provider": "powerdns",
			"properties": map[string]any{"name": zone, "kind": "Native", "nameservers": []string{"ns1." + zone}}},
	}
	for i := range records {
		id := fmt.Sprintf("CrashRecord%03d%08X", i, i)
		resources[id] = map[string]any{"type": "PowerDNS::DNS::RecordSet", "provider": "powerdns",
			"properties": map[string]any{"zoneId": map[string]any{"ref": "CrashZone5F3A9C21", "attr": "zoneId"},
				"name": fmt.Sprintf("r%03d.%s", i, zone), "type": "A", "ttl": 300, "records": []string{fmt.Sprintf("127.0.%d.%d", i/250, i%250+1)}},
			"dependsOn": []string{"CrashZone5F3A9C21"}}
	}
	out := filepath.Join(dir, "cdkx.out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := map[string]any{"version": "1.0.0", "artifacts": map[string]any{"Crash": map[string]any{"type": "cdkx:stack",
		"properties": map[string]any{"templateFile": "Crash.json"}}}}
	for name, v := range map[string]any{"manifest.json": manifest, "Crash.json": map[string]any{"resources": resources}} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

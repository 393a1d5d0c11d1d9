package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// withSnapshot returns d with a snapshot of one stack, A, whose template is template.
func withSnapshot(t *testing.T, d state.Deployment, template string) state.Deployment {
	t.Helper()
	snap := operation.Snapshot{Format: operation.SnapshotFormat, Kind: state.KindDeploy, Files: map[string]json.RawMessage{
		"manifest.json": json.RawMessage(`{"version": "1.0.0", "artifacts": {"A": {"type": "cdkx:stack", "properties": {"templateFile": "A.json"}}}}`),
		"A.json":        json.RawMessage(template),
	}}
	b, hash, err := snap.Encode()
	if err != nil {
		t.Fatal(err)
	}
	d.Snapshot, d.SnapshotHash = b, hash
	return d
}

func TestComparePage(t *testing.T) {
	t.Parallel()
	a := withSnapshot(t, completed, `{"resources": {"Zone": {"type": "Fake::Test::Thing", "properties": {"key": "z", "ttl": 60, "note": "<script>x()</script>"}},
		"Same": {"type": "Fake::Test::Thing", "properties": {"key": "s"}}}}`)
	b := withSnapshot(t, proposal, `{"resources": {"Zone": {"type": "Fake::Test::Thing", "properties": {"key": "z", "ttl": 300, "note": "<script>x()</script>"}},
		"Same": {"type": "Fake::Test::Thing", "properties": {"key": "s"}}}}`)
	src := &fakeSource{DeploymentF: func(_ context.Context, _ Caller, _ Scope, id string) (*state.Deployment, error) {
		switch id {
		case a.ID:
			return &a, nil
		case b.ID:
			return &b, nil
		}
		return nil, ErrNotFound
	}}
	c := newClient(t, src, Options{})
	c.login("good")
	base := "/acme/web/compare?a=" + a.ID + "&b=" + b.ID
	tests := []struct {
		name      string
		query     string
		want, not []string
	}{
		{name: "all", want: []string{"1 of 2 resources differ", "A/Same", "A/Zone", `<tr class="diff"><th scope="row"><code>properties.ttl</code></th><td><code>60</code></td><td><code>300</code>`,
			`\u003cscript\u003e`, `name="hideIdentical"`}, not: []string{"<script>x()"}},
		{name: "hide identical", query: "&hideIdentical=1", want: []string{"A/Zone", "properties.ttl"}, not: []string{"A/Same", "properties.key"}},
		{name: "resource filter", query: "&resource=same", want: []string{"A/Same"}, not: []string{"A/Zone"}},
		{name: "path search", query: "&path=TTL", want: []string{"A/Zone", "properties.ttl"}, not: []string{"A/Same", "properties.key"}},
	}
	for _, tt := range tests {
		resp, body := c.get(base + tt.query)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: GET compare = %d:\n%s", tt.name, resp.StatusCode, body)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: the page lacks %q", tt.name, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(body, n) {
				t.Errorf("%s: the page has %q", tt.name, n)
			}
		}
	}
	// From the proposal's page: compare with the last completed.
	_, body := c.get("/acme/web/deployments/" + proposal.ID)
	if !strings.Contains(body, `href="/acme/web/compare?a=`+completed.ID+`&amp;b=`+proposal.ID+`"`) {
		t.Errorf("the deployment page has no link to compare with the last completed:\n%s", body)
	}
	// Without snapshots: said, not a failure.
	plain := newClient(t, &fakeSource{}, Options{})
	plain.login("good")
	if resp, body := plain.get("/acme/web/compare?a=" + completed.ID + "&b=" + proposal.ID); resp.StatusCode != 200 || !strings.Contains(body, "not available") {
		t.Errorf("compare without snapshots = %d:\n%s", resp.StatusCode, body)
	}
}

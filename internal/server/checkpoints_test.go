package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cdkx-dev/cdkx/internal/server/storage"
)

// growingDeployment is a deployment of n resources, each about 200 bytes.
func growingDeployment(n int) string {
	res := make([]string, n)
	for i := range res {
		res[i] = fmt.Sprintf(`{"urn":"urn:pulumi:dev::proj::cdkx:Core:Data::r%04d","type":"cdkx:Core:Data","custom":true,"id":"id-%04d","outputs":{"value":"%s"}}`,
			i, i, strings.Repeat("x", 100))
	}
	return `{"version":3,"deployment":{"manifest":{"time":"2026-01-02T03:04:05Z","magic":"","version":"cdkx"},"resources":[` + strings.Join(res, ",") + `]}}`
}

// TestCheckpointStorageIsLinear sends one verbatim checkpoint per resource added (the worst case for
// whole-checkpoint storage: N checkpoints of up to N resources) and checks that every version exports
// byte for byte, from this replica's cache and from a fresh replica that rebuilds it from the stored
// snapshots and deltas, and that the bytes stored stay within a small multiple of the final state.
func TestCheckpointStorageIsLinear(t *testing.T) {
	e := newEnv(t)
	e.createStack("dev")
	id, lease := e.startUpdate("dev", "update")
	path := "/api/stacks/org/proj/dev/update/" + id
	const n = 300
	sent := make([]string, n+1)
	for i := 1; i <= n; i++ {
		sent[i] = growingDeployment(i)
		e.must(200, "PATCH", path+"/checkpointverbatim", lease,
			`{"version":3,"untypedDeployment":`+sent[i]+fmt.Sprintf(`,"sequenceNumber":%d}`, i))
	}
	e.must(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)

	var stored, snapshots int64
	if err := e.srv.db.Pool().QueryRow(context.Background(), `SELECT sum(coalesce(length(data), 0) + coalesce(length(delta), 0)),
 count(data) FROM svc_checkpoints`).Scan(&stored, &snapshots); err != nil {
		t.Fatal(err)
	}
	final := int64(len(sent[n]))
	whole := int64(0)
	for _, s := range sent[1:] {
		whole += int64(len(s))
	}
	t.Logf("%d versions: %d bytes stored (%d snapshots), final state %d bytes, whole checkpoints would be %d bytes",
		n, stored, snapshots, final, whole)
	if stored > 4*final {
		t.Errorf("stored %d bytes for a final state of %d bytes: want at most 4× (linear), whole checkpoints would take %d", stored, final, whole)
	}

	fresh, err := Open(context.Background(), e.srv.db.Pool().Config().ConnString(), Options{Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	for _, srv := range []*Server{e.srv, fresh} {
		for v := 1; v <= n; v++ {
			err := srv.inTx(context.Background(), func(tx *storage.Tx) error {
				got, err := srv.checkpointText(context.Background(), tx, 1, int64(v))
				if err != nil {
					return err
				}
				if string(got) != sent[v] {
					t.Errorf("version %d rebuilt as %d bytes, want the %d bytes sent", v, len(got), len(sent[v]))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
		}
	}
	if got := string(e.must(200, "GET", "/api/stacks/org/proj/dev/export/7?checkpoint=true", e.token, nil)); got != sent[7] {
		t.Errorf("export/7 = %d bytes, want the %d bytes sent", len(got), len(sent[7]))
	}
}

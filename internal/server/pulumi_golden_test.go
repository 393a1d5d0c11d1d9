package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pulumiGoldenCase is one checkpoint delta the Pulumi CLI computed (pkg/backend/httpstate's
// TestCloudSnapshotPersisterUseOfDiffProtocol, testdata/snapshot_test.json): the previous checkpoint's
// bytes, the deploymentDelta the CLI sent, its checkpointHash, and the bytes it describes.
type pulumiGoldenCase struct {
	name          string
	before, after []byte
	delta         json.RawMessage
	hash          string
	urns          []string // the resources the Pulumi test expects after the delta
}

// pulumiGolden loads testdata/pulumi/snapshot_test.json: "req1" is the first checkpoint (sent
// verbatim), "reqN" (N ≥ 2) the delta the CLI sent next and "reqN.hash" the SHA-256 of the
// checkpoint it yields. Each delta applies to the checkpoint the previous one yields. The expected
// bytes after each delta are computed here by a reference applier (gotextdiff.ApplyEdits' semantics)
// and accepted only when their SHA-256 is the CLI's checkpointHash, so they are the CLI's own bytes.
func pulumiGolden(t *testing.T) []pulumiGoldenCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pulumi", "snapshot_test.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]string
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatalf("snapshot_test.json: %v", err)
	}
	urns := map[string][]string{"req1": {"urn-1"}, "req2": {"urn-1", "urn-2"}, "req3": {"urn-1"}, "req4": {"urn-1"}}
	prev := []byte(file["req1"])
	if len(prev) == 0 {
		t.Fatal("snapshot_test.json has no req1")
	}
	var cases []pulumiGoldenCase
	for n := 2; ; n++ {
		name := fmt.Sprintf("req%d", n)
		delta, ok := file[name]
		if !ok {
			break
		}
		hash := file[name+".hash"]
		after := referenceApply(t, prev, []byte(delta))
		if got := sha256hex(after); got != hash {
			t.Fatalf("%s: the reference applier gives SHA-256 %s, the CLI's checkpointHash is %s", name, got, hash)
		}
		cases = append(cases, pulumiGoldenCase{name: name, before: prev, after: after, delta: json.RawMessage(delta), hash: hash, urns: urns[name]})
		prev = after
	}
	if len(cases) != len(file)/2 {
		t.Fatalf("snapshot_test.json: %d keys but %d delta cases", len(file), len(cases))
	}
	return cases
}

// referenceApply applies a deploymentDelta the way gotextdiff.ApplyEdits does (stable sort by span,
// then splice), independently of the server's applyDelta.
func referenceApply(t *testing.T, before, delta []byte) []byte {
	t.Helper()
	var edits []struct {
		Span struct {
			Start struct{ Offset int } `json:"start"`
			End   struct{ Offset int } `json:"end"`
		}
		NewText string
	}
	if err := json.Unmarshal(delta, &edits); err != nil {
		t.Fatalf("delta %s: %v", delta, err)
	}
	slices.SortStableFunc(edits, func(a, b struct {
		Span struct {
			Start struct{ Offset int } `json:"start"`
			End   struct{ Offset int } `json:"end"`
		}
		NewText string
	}) int {
		if a.Span.Start.Offset != b.Span.Start.Offset {
			return a.Span.Start.Offset - b.Span.Start.Offset
		}
		return a.Span.End.Offset - b.Span.End.Offset
	})
	var out strings.Builder
	last := 0
	for _, e := range edits {
		if e.Span.Start.Offset > last {
			out.Write(before[last:e.Span.Start.Offset])
		}
		out.WriteString(e.NewText)
		last = e.Span.End.Offset
	}
	if last < len(before) {
		out.Write(before[last:])
	}
	return []byte(out.String())
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// resourceURNs returns the URNs of an UntypedDeployment's resources.
func resourceURNs(t *testing.T, data []byte) []string {
	t.Helper()
	var d struct {
		Deployment struct {
			Resources []struct {
				URN string `json:"urn"`
			} `json:"resources"`
		} `json:"deployment"`
	}
	decode(t, data, &d)
	var urns []string
	for _, r := range d.Deployment.Resources {
		urns = append(urns, r.URN)
	}
	return urns
}

// TestApplyDeltaPulumiGolden checks applyDelta on the CLI's deltas, without a database.
func TestApplyDeltaPulumiGolden(t *testing.T) {
	for _, tc := range pulumiGolden(t) {
		t.Run(tc.name, func(t *testing.T) {
			edits, err := parseDelta(tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			got, err := applyDelta(tc.before, edits)
			if err != nil {
				t.Fatalf("applyDelta() = %v", err)
			}
			if !bytes.Equal(got, tc.after) || sha256hex(got) != tc.hash {
				t.Errorf("applyDelta() = %s (SHA-256 %s), want %s (%s)", got, sha256hex(got), tc.after, tc.hash)
			}
		})
	}
}

// TestDeltaPulumiGolden sends each of the CLI's deltas to the server, on top of its previous
// checkpoint accepted verbatim, and checks that the server stores the CLI's bytes exactly.
func TestDeltaPulumiGolden(t *testing.T) {
	cases := pulumiGolden(t)
	e := newEnv(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stack := fmt.Sprintf("golden%d", i)
			e.createStack(stack)
			id, lease := e.startUpdate(stack, "update")
			path := "/api/stacks/org/proj/" + stack + "/update/" + id
			e.must(200, "PATCH", path+"/checkpointverbatim", lease,
				fmt.Sprintf(`{"version":3,"untypedDeployment":%s,"sequenceNumber":1}`, tc.before))
			if got := e.must(200, "GET", "/api/stacks/org/proj/"+stack+"/export", e.token, nil); !bytes.Equal(got, tc.before) {
				t.Fatalf("export after verbatim = %s, want the verbatim bytes %s", got, tc.before)
			}
			body, err := json.Marshal(deltaRequest{Version: 3, CheckpointHash: tc.hash, SequenceNumber: 2, DeploymentDelta: tc.delta})
			if err != nil {
				t.Fatal(err)
			}
			e.must(200, "PATCH", path+"/checkpointdelta", lease, body)
			got := e.must(200, "GET", "/api/stacks/org/proj/"+stack+"/export", e.token, nil)
			if !bytes.Equal(got, tc.after) || sha256hex(got) != tc.hash {
				t.Errorf("export after delta = %s (SHA-256 %s), want %s (%s)", got, sha256hex(got), tc.after, tc.hash)
			}
			if got := resourceURNs(t, got); !slices.Equal(got, tc.urns) {
				t.Errorf("resources after delta = %v, want %v", got, tc.urns)
			}
			e.must(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
		})
	}

	// The whole sequence as the CLI sends it within one update: req1 verbatim (sequence 1), then each
	// delta (sequence 2, 3, …), gzip-encoded like the CLI's bodies; every version is kept byte-exact.
	t.Run("sequence", func(t *testing.T) {
		e.createStack("sequence")
		id, lease := e.startUpdate("sequence", "update")
		path := "/api/stacks/org/proj/sequence/update/" + id
		e.must(200, "PATCH", path+"/checkpointverbatim", lease,
			fmt.Sprintf(`{"version":3,"untypedDeployment":%s,"sequenceNumber":1}`, cases[0].before))
		for i, tc := range cases {
			body, err := json.Marshal(deltaRequest{Version: 3, CheckpointHash: tc.hash, SequenceNumber: int64(i + 2), DeploymentDelta: tc.delta})
			if err != nil {
				t.Fatal(err)
			}
			if code, data := e.do("PATCH", path+"/checkpointdelta", lease, gzipped(t, body), "Content-Encoding", "gzip"); code != 200 {
				t.Fatalf("%s: delta = %d %s", tc.name, code, data)
			}
		}
		e.must(200, "POST", path+"/complete", lease, `{"status":"succeeded"}`)
		want := [][]byte{cases[0].before}
		for _, tc := range cases {
			want = append(want, tc.after)
		}
		for v, w := range want {
			got := e.must(200, "GET", fmt.Sprintf("/api/stacks/org/proj/sequence/export/%d?checkpoint=true", v+1), e.token, nil)
			if !bytes.Equal(got, w) {
				t.Errorf("export/%d = %s, want %s", v+1, got, w)
			}
		}
		if got := e.must(200, "GET", "/api/stacks/org/proj/sequence/export", e.token, nil); !bytes.Equal(got, want[len(want)-1]) {
			t.Errorf("export = %s, want %s", got, want[len(want)-1])
		}
	})
}

// TestApplyDeltaOrder checks that edits sent out of order apply as gotextdiff.ApplyEdits applies them
// (sorted by span), and that overlapping edits are refused whatever their order.
func TestApplyDeltaOrder(t *testing.T) {
	edit := func(start, end int, text string) textEdit {
		var e textEdit
		e.Span.Start.Offset, e.Span.End.Offset, e.NewText = start, end, text
		return e
	}
	prev := []byte("0123456789")
	got, err := applyDelta(prev, []textEdit{edit(8, 9, "é"), edit(2, 4, ""), edit(2, 2, "a"), edit(2, 2, "b")})
	if want := "01ab4567é9"; err != nil || string(got) != want {
		t.Errorf("applyDelta(out of order) = %q, %v; want %q", got, err, want)
	}
	for _, edits := range [][]textEdit{{edit(2, 5, ""), edit(4, 6, "")}, {edit(4, 6, ""), edit(2, 5, "")}, {edit(3, 3, "x"), edit(1, 4, "")}} {
		if got, err := applyDelta(prev, edits); err == nil {
			t.Errorf("applyDelta(%v) = %q, want an overlap error", edits, got)
		}
	}
}

// TestApplyDeltaHostileOffsets checks that offsets far out of range are refused, not allocated.
func TestApplyDeltaHostileOffsets(t *testing.T) {
	var e textEdit
	e.Span.Start.Offset, e.Span.End.Offset = -1<<62, 0
	if _, err := applyDelta([]byte("{}"), []textEdit{e}); err == nil {
		t.Error("applyDelta(start -2^62) succeeded, want an error")
	}
	e.Span.Start.Offset, e.Span.End.Offset = 0, 1<<62
	if _, err := applyDelta([]byte("{}"), []textEdit{e}); err == nil {
		t.Error("applyDelta(end 2^62) succeeded, want an error")
	}
}

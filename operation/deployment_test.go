package operation_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/assembly"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/operation"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// loaded is an assembly and the files it was loaded from.
type loaded struct {
	*assembly.Assembly
	files map[string][]byte
}

// writeAssembly writes a one-stack assembly (stack S) whose resources R0..R(n-1) have value v and, when
// secret is not "", that write-only secret; it returns it loaded and validated.
func writeAssembly(t *testing.T, fx *fixture, n int, v, secret string) loaded {
	t.Helper()
	dir := t.TempDir()
	var res []string
	for i := range n {
		props := fmt.Sprintf(`"key": "k%d", "value": %q`, i, v)
		if secret != "" {
			props += fmt.Sprintf(`, "secret": %q`, secret)
		}
		res = append(res, fmt.Sprintf(`"R%d": {"type": %q, "provider": "fake", "properties": {%s}}`, i, enginetest.CloudType, props))
	}
	files := map[string]string{
		"manifest.json": `{"version": "1.0.0", "artifacts": {"S": {"type": "cdkx:stack", "properties": {"templateFile": "S.json"}}}}`,
		"S.json":        `{"resources": {` + strings.Join(res, ", ") + `}}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, read, ds := assembly.LoadWithFiles(dir)
	if a == nil {
		t.Fatalf("LoadWithFiles() = %v", ds)
	}
	a, _, ds = operation.Validate(a, ds, fx.env.Providers)
	if a == nil {
		t.Fatalf("Validate() = %v", ds)
	}
	return loaded{a, read}
}

func record(t *testing.T, fx *fixture, a loaded, status state.DeploymentStatus, passphrase string) *state.Deployment {
	t.Helper()
	ds, _, err := operation.Record{Env: fx.env, Assembly: a.Assembly, Files: a.files, Selection: operation.Selection{Stacks: []string{"S"}},
		Status: status, Kind: state.KindDeploy, Passphrase: passphrase}.Run(context.Background())
	if err != nil {
		t.Fatalf("Record(%s) = %v", status, err)
	}
	return ds[0]
}

func approve(t *testing.T, fx *fixture, d *state.Deployment) *state.Deployment {
	t.Helper()
	got, err := fx.env.Backend.UpdateDeployment(context.Background(), d.ID, state.Transition{
		From: []state.DeploymentStatus{state.StatusProposed}, To: state.StatusApproved, By: "bob@h", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func values(fx *fixture) map[string]string {
	out := map[string]string{}
	for _, p := range fx.cloud.Objects() {
		out["R"+strings.TrimPrefix(fmt.Sprint(p["key"]), "k")] = fmt.Sprint(p["value"])
	}
	return out
}

// TestProposeApproveRun: a proposal calls no provider and has its plan; approved and run, the provider has
// its values; a terminal deployment never runs again.
func TestProposeApproveRun(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	p := record(t, fx, writeAssembly(t, fx, 3, "a", ""), state.StatusProposed, "")
	if len(fx.cloud.Objects()) != 0 {
		t.Fatalf("a proposal created objects: %v", fx.cloud.Objects())
	}
	if p.Plan == nil || p.Plan.Create != 3 || len(p.Plan.Steps) != 3 {
		t.Fatalf("proposal plan = %+v, want 3 creates", p.Plan)
	}
	d := approve(t, fx, p)
	if _, _, err := (operation.RunDeployment{Env: fx.env, Deployment: d}).Run(ctx); err != nil {
		t.Fatalf("RunDeployment() = %v", err)
	}
	if diff := cmp.Diff(map[string]string{"R0": "a", "R1": "a", "R2": "a"}, values(fx)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	got, err := fx.env.Backend.GetDeployment(ctx, d.ID)
	if err != nil || got.Status != state.StatusCompleted || got.ApprovedBy != "bob@h" {
		t.Fatalf("after the run: %+v, %v; want COMPLETED approved by bob@h", got, err)
	}
	var te *state.TransitionError
	if _, _, err := (operation.RunDeployment{Env: fx.env, Deployment: got}).Run(ctx); !errors.As(err, &te) {
		t.Errorf("running a COMPLETED deployment again = %v, want *state.TransitionError", err)
	}
}

// TestStaleProposal: a proposal planned before another deploy moved the stack is refused as stale,
// before any provider call; --replan applies the new plan.
func TestStaleProposal(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	fx.deploy(t, writeAssembly(t, fx, 2, "v1", "").Assembly)
	p := record(t, fx, writeAssembly(t, fx, 2, "v2", ""), state.StatusProposed, "")
	fx.deploy(t, writeAssembly(t, fx, 2, "v3", "").Assembly) // a proposal holds no place: this goes through
	p = approve(t, fx, p)
	calls := len(fx.tick)
	_, _, err := (operation.RunDeployment{Env: fx.env, Deployment: p}).Run(ctx)
	var se *operation.StaleError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "stale") || len(se.Moved) != 1 || !strings.HasPrefix(se.Moved[0], "stack S: version ") {
		t.Fatalf("RunDeployment() = %v, want a stale error naming stack S's move", err)
	}
	if len(fx.tick) != calls {
		t.Errorf("a stale deployment called the provider %d time(s)", len(fx.tick)-calls)
	}
	if got, _ := fx.env.Backend.GetDeployment(ctx, p.ID); got.Status != state.StatusFailed {
		t.Errorf("stale deployment status = %s, want FAILED", got.Status)
	}
	q := record(t, fx, writeAssembly(t, fx, 2, "v2", ""), state.StatusProposed, "")
	fx.deploy(t, writeAssembly(t, fx, 2, "v4", "").Assembly)
	q = approve(t, fx, q)
	if _, _, err := (operation.RunDeployment{Env: fx.env, Deployment: q, Replan: true}).Run(ctx); err != nil {
		t.Fatalf("RunDeployment(replan) = %v", err)
	}
	if diff := cmp.Diff(map[string]string{"R0": "v2", "R1": "v2"}, values(fx)); diff != "" {
		t.Errorf("objects after --replan (-want +got):\n%s", diff)
	}
}

// TestAgentDrainsInCreationOrder: deployments queued without waiting run in creation order, the last one's
// values win, and the agent then finds nothing to do.
func TestAgentDrainsInCreationOrder(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		ids = append(ids, record(t, fx, writeAssembly(t, fx, 2, fmt.Sprintf("v%d", i), ""), state.StatusPending, "").ID)
	}
	agent := operation.Agent{Env: fx.env}
	var ran []string
	for {
		d, _, err := agent.Step(ctx)
		if errors.Is(err, operation.ErrNoDeployment) {
			break
		}
		if err != nil || d.Status != state.StatusCompleted {
			t.Fatalf("Step() = %+v, %v", d, err)
		}
		ran = append(ran, d.ID)
	}
	if diff := cmp.Diff(ids, ran); diff != "" {
		t.Errorf("run order (-created +ran):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"R0": "v3", "R1": "v3"}, values(fx)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestSecretsAreSealed: a proposal with a write-only value needs a passphrase, stores it encrypted, and
// runs only with the passphrase.
func TestSecretsAreSealed(t *testing.T) {
	fx := newFixture(t, 0)
	ctx := context.Background()
	a := writeAssembly(t, fx, 1, "a", "hunter2-hunter2")
	_, _, err := operation.Record{Env: fx.env, Assembly: a.Assembly, Files: a.files, Selection: operation.Selection{Stacks: []string{"S"}},
		Status: state.StatusProposed, Kind: state.KindDeploy}.Run(ctx)
	if !errors.Is(err, operation.ErrNoPassphrase) {
		t.Fatalf("proposing a secret without a passphrase = %v, want ErrNoPassphrase", err)
	}
	d := approve(t, fx, record(t, fx, a, state.StatusProposed, "pass phrase"))
	stored, err := fx.env.Backend.GetDeployment(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored.Snapshot, []byte("hunter2")) {
		t.Fatalf("the snapshot holds the secret in plain text")
	}
	if _, _, err := (operation.RunDeployment{Env: fx.env, Deployment: d}).Run(ctx); !errors.Is(err, operation.ErrNoPassphrase) {
		t.Fatalf("running without the passphrase = %v, want ErrNoPassphrase", err)
	}
	if len(fx.cloud.Objects()) != 0 {
		t.Fatalf("a refused run created objects")
	}
	// Refused before its claim, it is still APPROVED: run it with the passphrase.
	if _, _, err := (operation.RunDeployment{Env: fx.env, Deployment: d, Passphrase: "pass phrase"}).Run(ctx); err != nil {
		t.Fatalf("running with the passphrase = %v", err)
	}
	if got := fx.cloud.Objects()["fake-1"]["secret"]; got != "hunter2-hunter2" {
		t.Errorf("secret at the provider = %v", got)
	}
}

// TestAbortRunning: aborting a running deployment stops it (no new step), records it ABORTED and
// returns *AbortedError; nothing is rolled back.
func TestAbortRunning(t *testing.T) {
	fx := newFixture(t, 50*time.Millisecond)
	fx.env.Concurrency = 2
	ctx := context.Background()
	a := writeAssembly(t, fx, 60, "a", "")
	d := approve(t, fx, record(t, fx, a, state.StatusProposed, ""))
	go func() {
		for {
			got, err := fx.env.Backend.GetDeployment(ctx, d.ID)
			if err == nil && got.Status == state.StatusRunning && len(fx.cloud.Objects()) >= 4 {
				_, _ = fx.env.Backend.RequestAbort(ctx, d.ID, "carol@h", time.Now())
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, _, err := (operation.RunDeployment{Env: fx.env, Deployment: d}).Run(ctx)
	var ae *operation.AbortedError
	if !errors.As(err, &ae) || ae.By != "carol@h" {
		t.Fatalf("RunDeployment() = %v, want *AbortedError by carol@h", err)
	}
	if n := len(fx.cloud.Objects()); n == 0 || n >= 60 {
		t.Errorf("%d objects after the abort, want some but not all", n)
	}
	got, _ := fx.env.Backend.GetDeployment(ctx, d.ID)
	if got.Status != state.StatusAborted || got.AbortedBy != "carol@h" {
		t.Errorf("deployment after the abort: %s by %q, want ABORTED by carol@h", got.Status, got.AbortedBy)
	}
	st, _ := fx.env.Backend.GetStack(ctx, "S")
	if len(st.Resources) != len(fx.cloud.Objects()) {
		t.Errorf("state records %d resources, the provider has %d", len(st.Resources), len(fx.cloud.Objects()))
	}
	t.Logf("aborted after %s with %d of 60 created", time.Since(start).Round(time.Millisecond), len(fx.cloud.Objects()))
}

// TestTamperedDeployment: an approved deployment whose stored record was changed after approval is refused
// as tampered before any provider call, whether the snapshot no longer matches its hash or snapshot and
// hash were both changed (the plan made now differs while the stack did not move); --replan never
// accepts it.
func TestTamperedDeployment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name string
		// tamper changes the approved deployment d as an attacker with write access to the records
		// would, given the stored record of another proposal.
		tamper func(d, other *state.Deployment)
		// moved deploys another change first, so that the stack moved since d was planned.
		moved, replan bool
		// wantHashes: the error names the hashes (else the plan's differences).
		wantHashes bool
		wantDiffs  []string
	}{
		{name: "snapshot changed", wantHashes: true,
			tamper: func(d, other *state.Deployment) { d.Snapshot = other.Snapshot }},
		{name: "snapshot changed, stack moved, replan", moved: true, replan: true, wantHashes: true,
			tamper: func(d, other *state.Deployment) { d.Snapshot = other.Snapshot }},
		{name: "plan names another snapshot", wantHashes: true,
			tamper: func(d, other *state.Deployment) { d.Snapshot, d.SnapshotHash = other.Snapshot, other.SnapshotHash }},
		{name: "snapshot, hash and plan's hash changed",
			tamper: func(d, other *state.Deployment) {
				d.Snapshot, d.SnapshotHash, d.Plan.SnapshotHash = other.Snapshot, other.SnapshotHash, other.SnapshotHash
			},
			wantDiffs: []string{
				`S/R0: update value: approved "v1" → "v2", now "v1" → "EVIL"`,
				`S/R1: update value: approved "v1" → "v2", now "v1" → "EVIL"`,
				"S/R2: not in the approved plan; now create",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, 0)
			fx.deploy(t, writeAssembly(t, fx, 2, "v1", "").Assembly)
			p := record(t, fx, writeAssembly(t, fx, 2, "v2", ""), state.StatusProposed, "")
			evil, err := fx.env.Backend.GetDeployment(ctx, record(t, fx, writeAssembly(t, fx, 3, "EVIL", ""), state.StatusProposed, "").ID)
			if err != nil {
				t.Fatal(err)
			}
			if tt.moved {
				fx.deploy(t, writeAssembly(t, fx, 2, "v3", "").Assembly) // a proposal holds no place
			}
			d := approve(t, fx, p)
			if d.Snapshot, err = snapshotOf(fx, d.ID); err != nil {
				t.Fatal(err)
			}
			tt.tamper(d, evil)
			before := values(fx)
			calls := len(fx.tick)
			_, _, err = (operation.RunDeployment{Env: fx.env, Deployment: d, Replan: tt.replan}).Run(ctx)
			var te *operation.TamperedError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), "tampered") {
				t.Fatalf("RunDeployment() = %v, want a *TamperedError", err)
			}
			if got := te.Recorded != te.Stored; got != tt.wantHashes {
				t.Errorf("TamperedError names hashes %q, %q; want a hash mismatch: %v", te.Recorded, te.Stored, tt.wantHashes)
			}
			if diff := cmp.Diff(tt.wantDiffs, te.Differences); diff != "" {
				t.Errorf("TamperedError.Differences (-want +got):\n%s", diff)
			}
			if len(fx.tick) != calls {
				t.Errorf("a tampered deployment called the provider %d time(s)", len(fx.tick)-calls)
			}
			if diff := cmp.Diff(before, values(fx)); diff != "" {
				t.Errorf("objects changed (-before +after):\n%s", diff)
			}
		})
	}
}

// snapshotOf reads deployment id's stored snapshot.
func snapshotOf(fx *fixture, id string) ([]byte, error) {
	d, err := fx.env.Backend.GetDeployment(context.Background(), id)
	if err != nil {
		return nil, err
	}
	return d.Snapshot, nil
}

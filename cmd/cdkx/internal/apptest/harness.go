package apptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdkx-dev/cdkx/adapters/core"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine"
	"github.com/cdkx-dev/cdkx/engine/enginetest"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
	"github.com/google/go-cmp/cmp"
)

// Now is the fixed time of a Harness's clock: every elapsed time a run prints is 0.
var Now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// Harness is a command's world in a run test: a factory whose streams are buffers (no terminal), whose
// clock stands at Now and whose ticker never ticks, with the providers "cdkx" (built in) and "fake" (Cloud,
// in memory: type enginetest.CloudType), and state in a SQLite file of a temporary directory.
type Harness struct {
	F *cli.Factory
	// In is what a prompt reads; Out and ErrOut hold what the command printed on stdout and stderr.
	In          *bytes.Buffer
	Out, ErrOut *bytes.Buffer
	Cloud       *enginetest.Cloud
	// State is the path of the SQLite state file (absent until a command or Seed creates it).
	State string
}

// New returns a Harness with an empty cloud and no state.
func New(tb testing.TB) *Harness {
	tb.Helper()
	h := &Harness{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Cloud: enginetest.NewCloud(),
		State: filepath.Join(tb.TempDir(), "state.db")}
	reg := engine.NewRegistry(core.New(), h.Cloud)
	h.F = &cli.Factory{IO: &cli.IOStreams{In: h.In, Out: h.Out, ErrOut: h.ErrOut, Width: 100, Height: 24},
		Version: "v1.2.3", Getenv: func(string) string { return "" }, Now: func() time.Time { return Now },
		OpenBackend: func(ctx context.Context, location string) (state.Backend, error) {
			return sqlite.Open(ctx, location)
		},
		OpenBackendReadOnly: func(ctx context.Context, location string) (state.Backend, error) {
			return sqlite.OpenReadOnly(ctx, location)
		},
		Providers: func() *engine.Registry { return reg },
		Ticker:    func() (<-chan time.Time, func()) { return nil, func() {} }}
	return h
}

// Config returns the configuration of a run on the assembly in app with the harness's state: one
// provider call at a time (so that events come in one order), approval for destructive plans.
func (h *Harness) Config(app string) *cli.Config {
	return &cli.Config{App: app, State: h.State, Concurrency: 1, RequireApproval: cli.ApprovalDestructive}
}

// with opens the harness's state, runs do on it and closes it; an error of either ends the test.
func (h *Harness) with(tb testing.TB, do func(state.Backend) error) {
	tb.Helper()
	b, err := sqlite.Open(context.Background(), h.State)
	if err != nil {
		tb.Fatal(err)
	}
	err = do(b)
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// Reset empties Out and ErrOut, for the next command of a test.
func (h *Harness) Reset() {
	h.Out.Reset()
	h.ErrOut.Reset()
}

// Stacks writes a cloud assembly of the stacks in templates (name → template JSON, written as it is,
// valid or not; the manifest lists them by name, with no dependencies between them) into a new temporary
// directory and returns that directory.
func Stacks(tb testing.TB, templates map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	var arts []string
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		arts = append(arts, `"`+name+`": {"type": "cdkx:stack", "properties": {"templateFile": "`+name+`.json"}}`)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(templates[name]), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	manifest := `{"version": "1.0.0", "artifacts": {` + strings.Join(arts, ", ") + `}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// uuidPattern matches a deployment or lock ID; runnerPattern the process and machine of a deployment's
// runner ("user@host pid N on MACHINE"), pidPattern a process ID.
var (
	uuidPattern   = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	runnerPattern = regexp.MustCompile(`pid \d+ on [^"\s]+`)
	pidPattern    = regexp.MustCompile(`pid \d+`)
)

// Scrub returns s with what differs from run to run replaced: each distinct UUID by ID1, ID2… in order of
// first appearance, the user@host of cli.CreatedBy by USER@HOST, a runner's "pid N on MACHINE" by
// "pid PID on MACHINE", other process IDs by PID, and each of the paths by its name in upper case (e.g.
// "APP").
func Scrub(s string, paths map[string]string) string {
	for name, p := range paths {
		s = strings.ReplaceAll(s, p, name)
	}
	s = strings.ReplaceAll(s, cli.CreatedBy(), "USER@HOST")
	s = runnerPattern.ReplaceAllString(s, "pid PID on MACHINE")
	s = pidPattern.ReplaceAllString(s, "pid PID")
	seen := map[string]string{}
	return uuidPattern.ReplaceAllStringFunc(s, func(id string) string {
		if n, ok := seen[id]; ok {
			return n
		}
		seen[id] = "ID" + strconv.Itoa(len(seen)+1)
		return seen[id]
	})
}

// Output returns what the command printed, as a golden file holds it: "== stdout", stdout, "== stderr",
// stderr, scrubbed (Scrub) of the paths.
func (h *Harness) Output(paths map[string]string) string {
	return Scrub("== stdout\n"+h.Out.String()+"== stderr\n"+h.ErrOut.String(), paths)
}

// Objects returns the cloud's objects by their "key" property (fmt's %v of it), for comparing what a
// run left at the provider whatever physical IDs it got.
func (h *Harness) Objects() map[string]resource.Properties {
	out := map[string]resource.Properties{}
	for _, p := range h.Cloud.Objects() {
		out[fmt.Sprint(p["key"])] = p
	}
	return out
}

// Seed creates one cloud object for each of ids, with the properties {"key": id, "value": id}, and
// records them in state as resources of stack, as a deploy would have (each depending on the one before,
// the stack CREATE_COMPLETE). It returns the physical IDs by logical ID.
func (h *Harness) Seed(tb testing.TB, stack string, ids ...string) map[string]string {
	tb.Helper()
	phys := map[string]string{}
	var changes []state.Change
	for i, id := range ids {
		props := resource.Properties{"key": id, "value": id}
		phys[id] = h.Cloud.Put(props)
		r := &state.Resource{LogicalID: id, Type: enginetest.CloudType, Provider: "fake", PhysicalID: phys[id], Inputs: props,
			Outputs: resource.Properties{"id": phys[id], "value": id}, Status: "CREATE_COMPLETE", UpdatedAt: Now}
		if i > 0 {
			r.Dependencies = []string{ids[i-1]}
		}
		changes = append(changes, state.Change{Kind: state.PutResource, Resource: r})
	}
	changes = append(changes, state.Change{Kind: state.PutStack, Status: "CREATE_COMPLETE"})
	h.with(tb, func(b state.Backend) error {
		_, err := b.Commit(context.Background(), "seed", stack, changes, nil)
		return err
	})
	return phys
}

// Resources returns the statuses of the resources state records for stack, by logical ID (empty when the
// stack has no state).
func (h *Harness) Resources(tb testing.TB, stack string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for _, r := range h.stack(tb, stack) {
		out[r.LogicalID] = r.Status
	}
	return out
}

// stack returns the resources state records for stack (none when it has no state).
func (h *Harness) stack(tb testing.TB, name string) map[string]*state.Resource {
	tb.Helper()
	var rs map[string]*state.Resource
	h.with(tb, func(b state.Backend) error {
		st, err := b.GetStack(context.Background(), name)
		if err == nil {
			rs = st.Resources
		}
		if errors.Is(err, state.ErrNotFound) {
			return nil
		}
		return err
	})
	return rs
}

// Deployments returns "<kind> <status>" of each recorded deployment, oldest first.
func (h *Harness) Deployments(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, d := range h.Records(tb) {
		out = append(out, string(d.Kind)+" "+string(d.Status))
	}
	return out
}

// Records returns the recorded deployments, oldest first.
func (h *Harness) Records(tb testing.TB) []state.Deployment {
	tb.Helper()
	var ds []state.Deployment
	h.with(tb, func(b state.Backend) (err error) {
		ds, err = b.ListDeployments(context.Background(), state.DeploymentFilter{})
		return err
	})
	slices.Reverse(ds)
	return ds
}

// Inputs returns the recorded inputs of the resource logicalID of stack (nil when state has none).
func (h *Harness) Inputs(tb testing.TB, stack, logicalID string) resource.Properties {
	tb.Helper()
	if r := h.stack(tb, stack)[logicalID]; r != nil {
		return r.Inputs
	}
	return nil
}

// SortEvents returns s with each run of consecutive event lines (table rows at Now, or JSON "event"
// objects) sorted, for a run whose events come in no set order (refresh reads in parallel).
func SortEvents(s string) string {
	lines := strings.Split(s, "\n")
	isEvent := func(l string) bool {
		return strings.HasPrefix(l, Now.Format(time.RFC3339)) || strings.HasPrefix(l, `{"kind":"event"`)
	}
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && isEvent(lines[j]) {
			j++
		}
		slices.Sort(lines[i:j])
		i = max(j, i+1)
	}
	return strings.Join(lines, "\n")
}

// Want is what a command's run should end with: its error's text ("" for none), stdout and stderr.
type Want struct{ Err, Out, ErrOut string }

// CheckRun compares a run's error and output with want, reporting each difference.
func CheckRun(t *testing.T, err error, out, errOut string, want Want) {
	t.Helper()
	gotErr := ""
	if err != nil {
		gotErr = err.Error()
	}
	for _, c := range []struct{ what, want, got string }{
		{"error", want.Err, gotErr}, {"stdout", want.Out, out}, {"stderr", want.ErrOut, errOut}} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.what, diff)
		}
	}
}

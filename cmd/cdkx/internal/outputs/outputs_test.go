package outputs

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/pkg/backend/sqlite"
	"github.com/cdkx-dev/cdkx/pkg/resource"
	"github.com/cdkx-dev/cdkx/pkg/state"
)

// writeState records stacks App (outputs WwwFqdn, ApiFqdn, Port, Names), Zones.Prod (a dot in its name:
// output ZoneId) and Empty (no outputs) in a new SQLite file and returns its path.
func writeState(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	for stack, outs := range map[string]resource.Properties{
		"App": {"WwwFqdn": "www.example.test.", "ApiFqdn": "api.example.test.", "Port": json.Number("443"),
			"Names": []any{"a", "b"}},
		"Zones.Prod": {"ZoneId": "example.test."},
		"Empty":      {},
	} {
		if _, err := b.Commit(t.Context(), "d1", stack, []state.Change{{Kind: state.PutStack, Status: "CREATE_COMPLETE", Outputs: outs}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOutputsRun(t *testing.T) {
	t.Parallel()
	path := writeState(t)
	tests := []struct {
		name       string
		arg        string
		raw, json  bool
		state      string // default: path
		wantOut    string
		wantErrOut string
		wantErr    string
	}{
		{name: "every stack", wantOut: "Outputs:\nApp.ApiFqdn = \"api.example.test.\"\nApp.Names = [\"a\",\"b\"]\n" +
			"App.Port = 443\nApp.WwwFqdn = \"www.example.test.\"\nZones.Prod.ZoneId = \"example.test.\"\n"},
		{name: "one stack", arg: "Zones.Prod", wantOut: "Outputs:\nZones.Prod.ZoneId = \"example.test.\"\n"},
		{name: "one stack JSON", arg: "App", json: true,
			wantOut: `{"App":{"ApiFqdn":"api.example.test.","Names":["a","b"],"Port":443,"WwwFqdn":"www.example.test."}}` + "\n"},
		{name: "a stack without outputs", arg: "Empty", wantErrOut: "Stack Empty has no outputs.\n"},
		{name: "one value", arg: "App.WwwFqdn", wantOut: "\"www.example.test.\"\n"},
		{name: "one value raw", arg: "App.WwwFqdn", raw: true, wantOut: "www.example.test.\n"},
		{name: "one value of a dotted stack raw", arg: "Zones.Prod.ZoneId", raw: true, wantOut: "example.test.\n"},
		{name: "a number raw", arg: "App.Port", raw: true, wantOut: "443\n"},
		{name: "a list raw", arg: "App.Names", raw: true, wantOut: "[\"a\",\"b\"]\n"},
		{name: "a string as JSON", arg: "App.WwwFqdn", json: true, wantOut: "\"www.example.test.\"\n"},
		{name: "unknown key", arg: "App.WwwFdqn",
			wantErr: `stack App has no output "WwwFdqn"; did you mean "WwwFqdn"? (outputs: ApiFqdn, Names, Port, WwwFqdn)`},
		{name: "unknown key, nothing near", arg: "App.Zzzzzzzzzzzz",
			wantErr: `stack App has no output "Zzzzzzzzzzzz" (outputs: ApiFqdn, Names, Port, WwwFqdn)`},
		{name: "unknown stack", arg: "Ap.WwwFqdn",
			wantErr: `stack Ap has no state; did you mean "App"? (deployed stacks: App, Empty, Zones.Prod)`},
		{name: "raw without a key", arg: "App", raw: true,
			wantErr: "--raw prints one output: name it as STACK.KEY, e.g. cdkx outputs App.KEY --raw"},
		{name: "raw without a name", raw: true,
			wantErr: "--raw prints one output: name it as STACK.KEY, e.g. cdkx outputs App.WwwFqdn --raw"},
		{name: "no state", state: "missing.db", wantErrOut: "No stack has state in missing.db yet: nothing to print.\n"},
		{name: "no state JSON", state: "missing.db", json: true, wantOut: "{}\n"},
		{name: "no state, one value", state: "missing.db", arg: "App.WwwFqdn",
			wantErr: "no stack has state in missing.db: deploy first (cdkx deploy), or pass --state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			location := path
			if tt.state != "" {
				location = filepath.Join(t.TempDir(), tt.state)
			}
			var out, errOut bytes.Buffer
			f := &cli.Factory{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut},
				OpenBackend: func(context.Context, string) (state.Backend, error) {
					t.Fatal("outputs opened the state for writing")
					return nil, nil
				},
				OpenBackendReadOnly: func(ctx context.Context, location string) (state.Backend, error) {
					return sqlite.OpenReadOnly(ctx, location)
				}}
			opts := &Options{F: f, Config: &cli.Config{State: location, JSON: tt.json}, Name: tt.arg, Raw: tt.raw}
			err := outputsRun(t.Context(), opts)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			wantErrOut := tt.wantErrOut
			if tt.state != "" {
				gotErr = string(bytes.ReplaceAll([]byte(gotErr), []byte(location), []byte(tt.state)))
				errOut = *bytes.NewBuffer(bytes.ReplaceAll(errOut.Bytes(), []byte(location), []byte(tt.state)))
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("outputsRun() error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantErrOut, errOut.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

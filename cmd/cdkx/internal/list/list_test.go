package list

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
)

func TestListRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		app      string // a shipped example; else template is written
		template string
		json     bool
		wantCode int // 0: no error
	}{
		{name: "valid", template: `{"resources": {"Z": {"type": "PowerDNS::DNS::Zone", "properties": {"name": "a."}}}}`},
		{name: "errors", wantCode: cli.ExitErr,
			template: `{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": {"ref": "Missing", "attr": "x"}}}}}`},
		{name: "warnings only", template: `{"resources": {"Z": {"type": "PowerDNS::DNS::Zone", "typo": 1}}}`},
		{name: "hostile logical ID", wantCode: cli.ExitErr,
			template: `{"resources": {"\u001b]0;pwned\u0007": {"type": "Cdkx::Core::Data"}, "R\n  Forged\tCdkx::Core::Data\tcdkx": {"type": "Cdkx::Core::Data"}}}`},
		{name: "dns example", app: "../../../../testdata/examples/dns/cdkx.out"},
		{name: "dns example as JSON", app: "../../../../testdata/examples/dns/cdkx.out", json: true},
		{name: "platform example as JSON", app: "../../../../testdata/examples/platform/cdkx.out", json: true},
		{name: "errors as JSON", json: true, wantCode: cli.ExitErr,
			template: `{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": {"ref": "Missing", "attr": "x"}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := tt.app
			if dir == "" {
				dir = apptest.OneStack(t, tt.template)
			}
			var out, errOut bytes.Buffer
			opts := &Options{F: &cli.Factory{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut}}, Config: &cli.Config{App: dir, JSON: tt.json}}
			err := listRun(context.Background(), opts)
			code := 0
			var ee *cli.ExitError
			switch {
			case errors.As(err, &ee):
				code = ee.Code
			case err != nil:
				t.Fatalf("listRun() = %v", err)
			}
			if code != tt.wantCode {
				t.Errorf("listRun() exit code = %d, want %d", code, tt.wantCode)
			}
			if tt.json {
				var v map[string]any
				if err := json.Unmarshal(out.Bytes(), &v); err != nil {
					t.Fatalf("listRun() --json printed %q: %v", out.String(), err)
				}
				if (v["problems"] != nil) != (tt.wantCode != 0) {
					t.Errorf("listRun() --json = %s, want problems only with errors", out.String())
				}
			}
			got := string(bytes.ReplaceAll([]byte("== stdout\n"+out.String()+"== stderr\n"+errOut.String()), []byte(dir), []byte("DIR")))
			golden.Assert(t, got, "TestListRun-"+filepath.Base(t.Name())+".golden")
		})
	}
}

package validate

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/apptest"
	"github.com/cdkx-dev/cdkx/cmd/cdkx/internal/cli"
	"github.com/cdkx-dev/cdkx/engine"
)

func TestValidateRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		app      string // a shipped example; else template is written
		template string
		json     bool
		wantCode int // 0: no error
	}{
		{name: "dns example", app: "../../../../testdata/examples/dns/cdkx.out"},
		{name: "platform example", app: "../../../../testdata/examples/platform/cdkx.out"},
		{name: "dns example JSON", app: "../../../../testdata/examples/dns/cdkx.out", json: true},
		{name: "warnings", template: `{"resources": {"Z": {"type": "PowerDNS::DNS::Zone", "properties": {"name": "a."}, "typo": 1}}}`},
		{name: "errors", wantCode: cli.ExitErr,
			template: `{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": {"ref": "Missin", "attr": "x"}}},
			"Missing": {"type": "PowerDNS::DNS::Recordset", "properties": {}}}}`},
		{name: "errors JSON", json: true, wantCode: cli.ExitErr,
			template: `{"resources": {"R": {"type": "Cdkx::Core::Data", "properties": {"input": {"ref": "Missin", "attr": "x"}}}}}`},
		{name: "no assembly", app: "does-not-exist", wantCode: cli.ExitErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			app := tt.app
			if app == "" {
				app = apptest.OneStack(t, tt.template)
			}
			var out, errOut bytes.Buffer
			f := &cli.Factory{IO: &cli.IOStreams{Out: &out, ErrOut: &errOut}, Providers: func() *engine.Registry {
				return cli.DefaultProviders(func(string) string { return "" })
			}}
			err := validateRun(t.Context(), &Options{F: f, Config: &cli.Config{App: app, JSON: tt.json}})
			code := 0
			var ee *cli.ExitError
			switch {
			case errors.As(err, &ee):
				code = ee.Code
			case err != nil:
				t.Fatalf("validateRun() = %v", err)
			}
			if code != tt.wantCode {
				t.Errorf("validateRun() exit code = %d, want %d", code, tt.wantCode)
			}
			got := "== stdout\n" + out.String() + "== stderr\n" + errOut.String()
			got = string(bytes.ReplaceAll([]byte(got), []byte(app), []byte("APP")))
			golden.Assert(t, got, "TestValidateRun-"+filepath.Base(t.Name())+".golden")
		})
	}
}

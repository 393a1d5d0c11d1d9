package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string // "": no file
		want []string
	}{
		{name: "no file"},
		{name: "malformed: LoadConfig reports it", file: `{"output": `},
		{name: "every known key", file: `{"app": "npx ts-node app.ts", "output": "out", "concurrency": {"powerdns": 2},
			"requireApproval": "any", "approval": {"requireSecondPerson": true}}`},
		{name: "misspelt top-level key", file: `{"requireAproval": "never"}`,
			want: []string{`cdkx.json: unknown key "requireAproval"; did you mean "requireApproval"?`}},
		{name: "case", file: `{"Output": "out"}`,
			want: []string{`cdkx.json: unknown key "Output"; did you mean "output"?`}},
		{name: "misspelt nested key", file: `{"approval": {"requireSecondPersn": true}}`,
			want: []string{`cdkx.json: unknown key "approval.requireSecondPersn"; did you mean "approval.requireSecondPerson"?`}},
		{name: "nothing near, sorted", file: `{"zzz": 1, "context": {}}`,
			want: []string{
				`cdkx.json: unknown key "context" (cdkx reads app, approval, concurrency, output, requireApproval); it is ignored`,
				`cdkx.json: unknown key "zzz" (cdkx reads app, approval, concurrency, output, requireApproval); it is ignored`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "cdkx.json")
			if tt.file != "" {
				if err := os.WriteFile(path, []byte(tt.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := ConfigWarnings(path)
			for i := range got {
				got[i] = "cdkx.json" + got[i][len(path):]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ConfigWarnings() (-want +got):\n%s", diff)
			}
		})
	}
}

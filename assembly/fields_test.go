package assembly

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadRefusesUnprintableNames(t *testing.T) {
	t.Parallel()
	const printed = "; cdkx prints names in tables and logs: use letters, digits and punctuation"
	long := strings.Repeat("A", MaxNameLen+1)
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name: "logical ID that sets the terminal title",
			files: map[string]string{"manifest.json": manifest("A"),
				"A.json": `{"resources": {"\u001b]0;pwned\u0007": {"type": "Cdkx::Core::Data"}}}`},
			want: []string{"error: cdkx.out/A.json: resources.\x1b]0;pwned\a: logical ID \"\\x1b]0;pwned\\a\" contains a control character (U+001B)" + printed},
		},
		{
			name: "logical ID that forges a table row",
			files: map[string]string{"manifest.json": manifest("A"),
				"A.json": `{"resources": {"Web\n2026-11-21T06:00:00Z  A  Cdkx::Core::Data  Db  DELETE_COMPLETE": {"type": "Cdkx::Core::Data"}}}`},
			want: []string{"error: cdkx.out/A.json: resources.Web\n2026-11-21T06:00:00Z  A  Cdkx::Core::Data  Db  DELETE_COMPLETE: " +
				`logical ID "Web\n2026-11-21T06:00:00Z  A  Cdkx::Core::Data  Db  DELETE_COMPLE"… contains a control character (U+000A)` + printed},
		},
		{
			name: "NUL, DEL, C1 and bidi override",
			files: map[string]string{"manifest.json": manifest("A"), "A.json": `{"resources": {
				"Nul\u0000": {"type": "Cdkx::Core::Data"}, "Del\u007f": {"type": "Cdkx::Core::Data"},
				"Csi\u009b": {"type": "Cdkx::Core::Data"}, "Rlo\u202egnp.exe": {"type": "Cdkx::Core::Data"},
				"Ls\u2028": {"type": "Cdkx::Core::Data"}, "Zone": {"type": "Cdkx::Core::Data"}, "Zoné": {"type": "Cdkx::Core::Data"}}}`},
			want: []string{
				"error: cdkx.out/A.json: resources.Csi\u009b: logical ID \"Csi\\u009b\" contains a control character (U+009B)" + printed,
				"error: cdkx.out/A.json: resources.Del\u007f: logical ID \"Del\\x7f\" contains a control character (U+007F)" + printed,
				"error: cdkx.out/A.json: resources.Ls\u2028: logical ID \"Ls\\u2028\" contains a line separator (U+2028)" + printed,
				"error: cdkx.out/A.json: resources.Nul\x00: logical ID \"Nul\\x00\" contains a control character (U+0000)" + printed,
				"error: cdkx.out/A.json: resources.Rlo\u202egnp.exe: logical ID \"Rlo\\u202egnp.exe\" contains an invisible formatting character (U+202E)" + printed,
			},
		},
		{
			name: "stack ID, display name and manifest lists",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {"A\u001b[2J": {"type": "cdkx:stack", "displayName": "App\u0007",
					"properties": {"templateFile": "A.json"}, "outputKeys": ["Out\r"], "dependencies": ["B\u001b"]},
					"B": {"type": "cdkx:stack", "properties": {"templateFile": "B.json"}}}}`,
				"A.json": `{}`, "B.json": `{}`,
			},
			want: []string{
				"error: cdkx.out/manifest.json: artifacts.A\x1b[2J: artifact ID \"A\\x1b[2J\" contains a control character (U+001B)" + printed,
				"error: cdkx.out/manifest.json: artifacts.A\x1b[2J.dependencies[0]: \"B\\x1b\" contains a control character (U+001B)" + printed,
				"error: cdkx.out/manifest.json: artifacts.A\x1b[2J.dependencies[0]: unknown stack \"B\\x1b\" (did you mean \"B\"?); dependencies name stacks of this manifest: A\x1b[2J, B",
				"error: cdkx.out/manifest.json: artifacts.A\x1b[2J.displayName: \"App\\a\" contains a control character (U+0007)" + printed,
				"error: cdkx.out/manifest.json: artifacts.A\x1b[2J.outputKeys[0]: \"Out\\r\" contains a control character (U+000D)" + printed,
			},
		},
		{
			name: "output key, type, provider and dependsOn",
			files: map[string]string{"manifest.json": manifest("A"), "A.json": `{"resources": {
				"R": {"type": "Cdkx::Core::Data\u001b[31m", "provider": "cdkx\u0000", "dependsOn": ["S\u0085"]},
				"S": {"type": "Cdkx::Core::Data"}},
				"outputs": {"Key\u001b]8;;http://evil\u0007": {"value": 1}}}`},
			want: []string{
				"error: cdkx.out/A.json: outputs.Key\x1b]8;;http://evil\a: output key \"Key\\x1b]8;;http://evil\\a\" contains a control character (U+001B)" + printed,
				"error: cdkx.out/A.json: resources.R.dependsOn[0]: \"S\\u0085\" contains a control character (U+0085)" + printed,
				"error: cdkx.out/A.json: resources.R.dependsOn[0]: unknown resource \"S\\u0085\" in stack A (did you mean \"S\"?)",
				"error: cdkx.out/A.json: resources.R.provider: \"cdkx\\x00\" contains a control character (U+0000)" + printed,
				"error: cdkx.out/A.json: resources.R.type: type \"Cdkx::Core::Data\\x1b[31m\" contains a control character (U+001B)" + printed,
			},
		},
		{
			name:  "names longer than MaxNameLen",
			files: map[string]string{"manifest.json": manifest(long), long + ".json": `{"resources": {"` + long + `": {"type": "Cdkx::Core::Data"}}}`},
			want: []string{
				"error: cdkx.out/" + long + ".json: resources." + long + `: logical ID "` + long[:64] + `"… is 256 bytes long, more than 255; use a shorter name`,
				"error: cdkx.out/manifest.json: artifacts." + long + `: artifact ID "` + long[:64] + `"… is 256 bytes long, more than 255; use a shorter name`,
			},
		},
		{
			name:  "printable Unicode is fine",
			files: map[string]string{"manifest.json": manifest("Zoné"), "Zoné.json": `{"resources": {"Rés☃": {"type": "Cdkx::Core::Data"}}, "outputs": {"Ключ": {"value": 1}}}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, ds := loadFiles(t, tt.files)
			if diff := cmp.Diff(tt.want, lines(ds), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Load() diagnostics mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

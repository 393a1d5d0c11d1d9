package assembly

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/golden"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cdkx-dev/cdkx/pkg/diag"
	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// net is a template with two resources, a subnet referring to the network, and an output.
const net = `{"resources": {
  "NetworkA1B2C3D4": {"type": "Hetzner::Networking::Network", "properties": {"name": "n"}},
  "SubnetE5F6A7B8": {"type": "Hetzner::Networking::Subnet",
    "properties": {"networkId": {"ref": "NetworkA1B2C3D4", "attr": "networkId"}},
    "dependsOn": ["NetworkA1B2C3D4"]}},
 "outputs": {"NetworkId": {"value": {"ref": "NetworkA1B2C3D4", "attr": "networkId"}}}}`

func TestLoadDiagnostics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		files   map[string]string
		want    []string
		wantNil bool // the assembly is nil
	}{
		{
			name:    "manifest missing",
			files:   map[string]string{},
			want:    []string{`error: cdkx.out/manifest.json: manifest not found; synthesize the app first, or pass the directory that holds manifest.json`},
			wantNil: true,
		},
		{
			name:    "manifest invalid JSON",
			files:   map[string]string{"manifest.json": "{\"version\": \"1.0.0\",\n  \"artifacts\": {,}}"},
			want:    []string{`error: cdkx.out/manifest.json:2:17: invalid JSON: invalid character ',' looking for beginning of object key string`},
			wantNil: true,
		},
		{
			name:    "manifest truncated",
			files:   map[string]string{"manifest.json": "{\"version\": \"1.0.0\",\n"},
			want:    []string{`error: cdkx.out/manifest.json:1:21: invalid JSON: unexpected end of JSON input`},
			wantNil: true,
		},
		{
			name:    "manifest not an object",
			files:   map[string]string{"manifest.json": `["1.0.0"]`},
			want:    []string{`error: cdkx.out/manifest.json: the manifest must be a JSON object, got a list`},
			wantNil: true,
		},
		{
			name:    "unsupported major version",
			files:   map[string]string{"manifest.json": `{"version": "2.1.0", "artifacts": {}}`},
			want:    []string{`error: cdkx.out/manifest.json: version: unsupported manifest version "2.1.0": cdkx reads version 1.x.x; synthesize the app with a cdkx release that writes manifest version 1, or use a cdkx that reads 2.1.0`},
			wantNil: true,
		},
		{
			name:  "missing version",
			files: map[string]string{"manifest.json": `{"artifacts": {}}`},
			want:  []string{`error: cdkx.out/manifest.json: missing "version"; want "version": "1.0.0"; reading the manifest as version 1`},
		},
		{
			name:  "invalid version",
			files: map[string]string{"manifest.json": `{"version": "1.0", "artifacts": {}}`},
			want:  []string{`error: cdkx.out/manifest.json: version: invalid version "1.0": want a semantic version such as "1.0.0"`},
		},
		{
			name:  "missing artifacts",
			files: map[string]string{"manifest.json": `{"version": "1.0.0"}`},
			want:  []string{`error: cdkx.out/manifest.json: missing "artifacts"`},
		},
		{
			name:  "unknown artifact type and unknown key",
			files: map[string]string{"manifest.json": `{"version": "1.0.0", "artifacts": {"Nested": {"type": "cdkx:nested-assembly"}}, "runtime": {}}`},
			want: []string{
				`error: cdkx.out/manifest.json: artifacts.Nested.type: unknown artifact type "cdkx:nested-assembly"; cdkx reads cdkx:stack, cdkx:asset and cdkx:local-files artifacts`,
				`warning: cdkx.out/manifest.json: runtime: unknown key "runtime" is ignored; known keys here: version, artifacts`,
			},
		},
		{
			name: "duplicate artifact ID",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {"A": {"type": "cdkx:local-files"}, "A": {"type": "cdkx:local-files"}}}`,
			},
			want: []string{`error: cdkx.out/manifest.json: artifacts.A: duplicate artifact ID "A"; a key may appear only once in a JSON object; the first one is read`},
		},
		{
			name: "legacy provider and environment",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {"S": {"type": "cdkx:stack", "provider": "hetzner",
					"environment": {"project": "p"}, "properties": {"templateFile": "S.json"}}}}`,
				"S.json": `{"resources": {}}`,
			},
			want: []string{
				`warning: cdkx.out/manifest.json: artifacts.S.environment: "environment" is ignored; older manifests carried it per stack; each resource of the template names its provider`,
				`warning: cdkx.out/manifest.json: artifacts.S.provider: "provider" is ignored; older manifests carried it per stack; each resource of the template names its provider`,
			},
		},
		{
			name: "templateFile missing or outside the assembly",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {"A": {"type": "cdkx:stack", "properties": {}},
					"B": {"type": "cdkx:stack", "properties": {"templateFile": "../B.json"}}, "C": {"type": "cdkx:stack"}}}`,
			},
			want: []string{
				`error: cdkx.out/manifest.json: artifacts.A.properties: missing "templateFile"`,
				`error: cdkx.out/manifest.json: artifacts.B.properties.templateFile: "../B.json" is not a path inside the assembly directory`,
				`error: cdkx.out/manifest.json: artifacts.C: missing "properties"`,
			},
		},
		{
			name:  "template file unreadable",
			files: map[string]string{"manifest.json": manifest("A"), "A.json/x": "{}"},
			want:  []string{`error: cdkx.out/manifest.json: artifacts.A.properties.templateFile: cannot read template file "cdkx.out/A.json": invalid argument`},
		},
		{
			name:  "template file not found",
			files: map[string]string{"manifest.json": manifest("A")},
			want:  []string{`error: cdkx.out/manifest.json: artifacts.A.properties.templateFile: template file "cdkx.out/A.json" not found`},
		},
		{
			name: "assets",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {
					"asset.1": {"type": "cdkx:asset", "properties": {"hash": "1", "path": "assets/asset.1/f", "packaging": "zip"}},
					"asset.2": {"type": "cdkx:asset", "properties": {"path": "/etc/passwd", "packaging": "file"}}}}`,
			},
			want: []string{
				`error: cdkx.out/manifest.json: artifacts.asset.1.properties.packaging: unknown packaging "zip": want "file" or "directory"`,
				`error: cdkx.out/manifest.json: artifacts.asset.2.properties: missing "hash"`,
				`error: cdkx.out/manifest.json: artifacts.asset.2.properties.path: "/etc/passwd" is not a path inside the assembly directory`,
			},
		},
		{
			name: "manifest dependency unknown or itself",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {
					"Network": {"type": "cdkx:stack", "properties": {"templateFile": "Network.json"}, "dependencies": [7]},
					"App": {"type": "cdkx:stack", "properties": {"templateFile": "App.json"}, "dependencies": ["Netwrk", "App"]}}}`,
				"Network.json": `{}`,
				"App.json":     `{}`,
			},
			want: []string{
				`error: cdkx.out/manifest.json: artifacts.App.dependencies[0]: unknown stack "Netwrk" (did you mean "Network"?); dependencies name stacks of this manifest: Network, App`,
				`error: cdkx.out/manifest.json: artifacts.App.dependencies[1]: stack App depends on itself`,
				`error: cdkx.out/manifest.json: artifacts.Network.dependencies[0]: must be a string, got a number`,
			},
		},
		{
			name: "template invalid JSON",
			files: map[string]string{
				"manifest.json": manifest("A"),
				"A.json":        "{\"resources\": {\n  \"X\": {\"type\": \"A::B::C\",}\n}}",
			},
			want: []string{`error: cdkx.out/A.json:2:27: invalid JSON: invalid character '}' looking for beginning of object key string`},
		},
		{
			name:  "template not an object",
			files: map[string]string{"manifest.json": manifest("A"), "A.json": `"resources"`},
			want:  []string{`error: cdkx.out/A.json: a template must be a JSON object, got a string`},
		},
		{
			name:  "template layout unrecognized",
			files: map[string]string{"manifest.json": manifest("A"), "A.json": `{"Resources": {"X": {"Type": "A::B::C"}}}`},
			want: []string{
				`error: cdkx.out/A.json: unrecognized template layout: no "resources" or "outputs" key, and not a flat map of resources; want {"resources": {ID: {"type": …}}, "outputs": {…}}`,
			},
		},
		{
			name:  "legacy flat layout",
			files: map[string]string{"manifest.json": manifest("A"), "A.json": `{"X": {"type": "A::B::C"}, "Y": {"type": "A::B::C", "dependsOn": ["Z"]}}`},
			want: []string{
				`warning: cdkx.out/A.json: the flat template layout (resources at the top level) is deprecated; synthesize the app again with a current cdkx, which writes {"resources": {…}, "outputs": {…}}`,
				`error: cdkx.out/A.json: Y.dependsOn[0]: unknown resource "Z" in stack A`,
			},
		},
		{
			name: "duplicate logical IDs and keys",
			files: map[string]string{
				"manifest.json": manifest("A", "B"),
				"A.json":        `{"resources": {"X": {"type": "A::B::C", "properties": {"p": 1, "p": 2}}, "X": {"type": "A::B::D"}}}`,
				"B.json":        `{"X": {"type": "A::B::C"}, "X": {"type": "A::B::C"}}`,
			},
			want: []string{
				`error: cdkx.out/A.json: resources.X: duplicate logical ID "X"; a key may appear only once in a JSON object; the first one is read`,
				`error: cdkx.out/A.json: resources.X.properties.p: duplicate key "p"; a key may appear only once in a JSON object; the first one is read`,
				`warning: cdkx.out/B.json: the flat template layout (resources at the top level) is deprecated; synthesize the app again with a current cdkx, which writes {"resources": {…}, "outputs": {…}}`,
				`error: cdkx.out/B.json: X: duplicate logical ID "X"; a key may appear only once in a JSON object; the first one is read`,
			},
		},
		{
			name: "resource shapes",
			files: map[string]string{
				"manifest.json": manifest("A"),
				"A.json": `{"resources": {
					"NoType": {"properties": {}},
					"BadType": {"type": "test::Resource", "provider": 3},
					"NumType": {"type": 5, "properties": [], "metadata": "m", "dependsOn": "NoType"},
					"BadDeps": {"type": "A::B::C", "dependsOn": ["NoType", 1, ""], "Properties": {}},
					"NotObject": []},
				  "outputs": {"O": "v", "P": {"value": 1, "descripton": "x", "description": 2}}}`,
			},
			want: []string{
				`error: cdkx.out/A.json: outputs.O: must be an object, got a string`,
				`error: cdkx.out/A.json: outputs.P.description: must be a string, got a number`,
				`warning: cdkx.out/A.json: outputs.P.descripton: unknown key "descripton" is ignored; known keys here: value, description`,
				`warning: cdkx.out/A.json: resources.BadDeps.Properties: unknown key "Properties" is ignored; known keys here: type, provider, properties, metadata, dependsOn`,
				`error: cdkx.out/A.json: resources.BadDeps.dependsOn[1]: must be a string, got a number`,
				`error: cdkx.out/A.json: resources.BadDeps.dependsOn[2]: must not be empty`,
				`error: cdkx.out/A.json: resources.BadType.provider: must be a string, got a number`,
				`error: cdkx.out/A.json: resources.BadType.type: invalid type "test::Resource": want Provider::Domain::Type; for example "PowerDNS::DNS::Zone"`,
				`error: cdkx.out/A.json: resources.NoType: missing "type"`,
				`error: cdkx.out/A.json: resources.NotObject: must be an object, got a list`,
				`error: cdkx.out/A.json: resources.NumType.dependsOn: must be a list of strings, got a string`,
				`error: cdkx.out/A.json: resources.NumType.metadata: must be an object, got a string`,
				`error: cdkx.out/A.json: resources.NumType.properties: must be an object, got a list`,
				`error: cdkx.out/A.json: resources.NumType.type: must be a string, got a number`,
			},
		},
		{
			name: "dependsOn and ref targets",
			files: map[string]string{
				"manifest.json": manifest("Network", "App"),
				"Network.json":  net,
				"App.json": `{"resources": {
					"ServerC1D2E3F4": {"type": "Hetzner::Compute::Server",
						"properties": {"networks": [{"ref": "NetworkA1B2C3D4", "attr": "networkId"}],
							"placement": {"group": {"ref": "PlacementGrupA1B2C3D4", "attr": "id"}}, "sshKey": {"ref": "KeyA1B2C3D4"}},
						"dependsOn": ["NetworkA1B2C3D4", "PlacementGroupA1B2C3D4", "Elsewhere"]},
					"PlacementGroupA1B2C3D4": {"type": "Hetzner::Compute::PlacementGroup"},
					"KeyA1B2C3D4": {"type": "Hetzner::Security::SshKey"}},
				  "outputs": {"Server": {"value": {"ref": "ServerC1D2E3F5", "attr": "serverId"}}}}`,
			},
			want: []string{
				`error: cdkx.out/App.json: outputs.Server.value: unknown resource "ServerC1D2E3F5" in stack App (did you mean "ServerC1D2E3F4"?)`,
				`error: cdkx.out/App.json: resources.ServerC1D2E3F4.dependsOn[0]: unknown resource "NetworkA1B2C3D4" in stack App; "NetworkA1B2C3D4" is a resource of stack Network; use {stackRef, outputKey} through an output of Network`,
				`error: cdkx.out/App.json: resources.ServerC1D2E3F4.dependsOn[2]: unknown resource "Elsewhere" in stack App`,
				`error: cdkx.out/App.json: resources.ServerC1D2E3F4.properties.networks[0]: unknown resource "NetworkA1B2C3D4" in stack App; "NetworkA1B2C3D4" is a resource of stack Network; use {stackRef, outputKey} through an output of Network`,
				`error: cdkx.out/App.json: resources.ServerC1D2E3F4.properties.placement.group: unknown resource "PlacementGrupA1B2C3D4" in stack App (did you mean "PlacementGroupA1B2C3D4"?)`,
				`error: cdkx.out/App.json: resources.ServerC1D2E3F4.properties.sshKey: a {ref} without attr is resolved only at synth time; use {ref: ID, attr: NAME}; name the output attribute of "KeyA1B2C3D4" to use`,
			},
		},
		{
			name: "stackRef targets",
			files: map[string]string{
				"manifest.json": `{"version": "1.0.0", "artifacts": {
					"Network": {"type": "cdkx:stack", "properties": {"templateFile": "Network.json"}},
					"Gone": {"type": "cdkx:stack", "properties": {"templateFile": "Gone.json"}, "outputKeys": ["Id"]},
					"Unknown": {"type": "cdkx:stack", "properties": {"templateFile": "Unknown.json"}},
					"App": {"type": "cdkx:stack", "properties": {"templateFile": "App.json"}}}}`,
				"Network.json": net,
				"App.json": `{"resources": {"S": {"type": "A::B::C", "properties": {
						"a": {"stackRef": "Netwrok", "outputKey": "NetworkId"},
						"b": {"stackRef": "Network", "outputKey": "NetworkID"},
						"c": {"stackRef": "App", "outputKey": "X"},
						"d": {"stackRef": "Gone", "outputKey": "Name"},
						"e": {"stackRef": "Unknown", "outputKey": "Anything"},
						"f": {"stackRef": "", "outputKey": "X"}}}},
				  "outputs": {"X": {"value": {"stackRef": "Network", "outputKey": "Subnet"}}}}`,
			},
			want: []string{
				`error: cdkx.out/App.json: outputs.X.value: stack Network has no output "Subnet"; outputs of Network: NetworkId`,
				`error: cdkx.out/App.json: resources.S.properties.a: unknown stack "Netwrok" (did you mean "Network"?); stacks of this assembly: Network, Gone, Unknown, App`,
				`error: cdkx.out/App.json: resources.S.properties.b: stack Network has no output "NetworkID" (did you mean "NetworkId"?); outputs of Network: NetworkId`,
				`error: cdkx.out/App.json: resources.S.properties.c: stackRef to its own stack App; use {ref: ID, attr: NAME} for a resource of the same stack`,
				`error: cdkx.out/App.json: resources.S.properties.d: stack Gone has no output "Name"; outputs of Gone: Id`,
				`error: cdkx.out/App.json: resources.S.properties.f: unknown stack ""; stacks of this assembly: Network, Gone, Unknown, App`,
				`error: cdkx.out/manifest.json: artifacts.Gone.properties.templateFile: template file "cdkx.out/Gone.json" not found`,
				`error: cdkx.out/manifest.json: artifacts.Unknown.properties.templateFile: template file "cdkx.out/Unknown.json" not found`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, ds := loadFiles(t, tt.files)
			if diff := cmp.Diff(tt.want, lines(ds)); diff != "" {
				t.Errorf("Load() diagnostics mismatch (-want +got):\n%s", diff)
			}
			if (a == nil) != tt.wantNil {
				t.Errorf("Load() assembly = %v, want nil: %t", a, tt.wantNil)
			}
		})
	}
}

func TestLoadReadsTheFormat(t *testing.T) {
	t.Parallel()
	a, ds := loadFiles(t, map[string]string{
		"manifest.json": `{"version": "1.2.3-rc.1+build.5", "artifacts": {
			"Zeta": {"type": "cdkx:stack", "properties": {"templateFile": "Zeta.json"}, "displayName": "Zeta stack", "outputKeys": ["NetworkId"]},
			"asset.ab": {"type": "cdkx:asset", "properties": {"hash": "ab", "path": "assets/asset.ab/x.yaml", "packaging": "file"}},
			"Alpha": {"type": "cdkx:stack", "properties": {"templateFile": "sub/Alpha.json"}, "dependencies": ["Zeta", "Mid", "Zeta"]},
			"Mid": {"type": "cdkx:stack", "properties": {"templateFile": "Mid.json"}},
			"files": {"type": "cdkx:local-files", "properties": {}}}}`,
		"Zeta.json": net,
		"sub/Alpha.json": `{"resources": {"B": {"type": "PowerDNS::DNS::RecordSet", "provider": "pdns",
			"properties": {"ttl": 300, "weight": 1.50, "nested": [{"stackRef": "Mid", "outputKey": "Name"}]},
			"metadata": {"cdkx:path": "Alpha/B"}},
			"A": {"type": "Cdkx::Core::Data"}}}`,
		"Mid.json": `{"outputs": {"Name": {"value": "mid", "description": "The name"}, "Net": {"value": {"stackRef": "Zeta", "outputKey": "NetworkId"}}}}`,
	})
	if len(ds) != 0 {
		t.Fatalf("Load() diagnostics = %v, want none", lines(ds))
	}
	want := &Assembly{
		Dir:        "cdkx.out",
		Version:    "1.2.3-rc.1+build.5",
		Assets:     []*Asset{{ID: "asset.ab", Hash: "ab", Path: "assets/asset.ab/x.yaml", Packaging: "file"}},
		LocalFiles: []string{"files"},
		Stacks: []*Stack{
			{
				ID: "Zeta", DisplayName: "Zeta stack", TemplateFile: "Zeta.json", File: "cdkx.out/Zeta.json", OutputKeys: []string{"NetworkId"},
				Resources: []*Resource{
					{LogicalID: "NetworkA1B2C3D4", Type: "Hetzner::Networking::Network", Provider: "hetzner", ProviderFromType: true,
						Properties: resource.Properties{"name": "n"}, Path: "resources.NetworkA1B2C3D4"},
					{LogicalID: "SubnetE5F6A7B8", Type: "Hetzner::Networking::Subnet", Provider: "hetzner", ProviderFromType: true,
						Properties: resource.Properties{"networkId": map[string]any{"ref": "NetworkA1B2C3D4", "attr": "networkId"}},
						DependsOn:  []string{"NetworkA1B2C3D4"}, Path: "resources.SubnetE5F6A7B8"},
				},
				Outputs: map[string]*Output{"NetworkId": {Key: "NetworkId", Path: "outputs.NetworkId",
					Value: map[string]any{"ref": "NetworkA1B2C3D4", "attr": "networkId"}}},
			},
			{
				ID: "Alpha", DisplayName: "Alpha", TemplateFile: "sub/Alpha.json", File: "cdkx.out/sub/Alpha.json",
				Dependencies: []string{"Mid", "Zeta"},
				Resources: []*Resource{
					{LogicalID: "A", Type: "Cdkx::Core::Data", Provider: "cdkx", ProviderFromType: true, Properties: resource.Properties{}, Path: "resources.A"},
					{LogicalID: "B", Type: "PowerDNS::DNS::RecordSet", Provider: "pdns", Path: "resources.B",
						Properties: resource.Properties{"ttl": json.Number("300"), "weight": json.Number("1.50"),
							"nested": []any{map[string]any{"stackRef": "Mid", "outputKey": "Name"}}},
						Metadata: map[string]any{"cdkx:path": "Alpha/B"}},
				},
				Outputs: map[string]*Output{},
			},
			{
				ID: "Mid", DisplayName: "Mid", TemplateFile: "Mid.json", File: "cdkx.out/Mid.json",
				Dependencies: []string{"Zeta"}, // from an output only
				Outputs: map[string]*Output{
					"Name": {Key: "Name", Value: "mid", Description: "The name", Path: "outputs.Name"},
					"Net":  {Key: "Net", Value: map[string]any{"stackRef": "Zeta", "outputKey": "NetworkId"}, Path: "outputs.Net"},
				},
			},
		},
	}
	if diff := cmp.Diff(want, a, cmpopts.IgnoreUnexported(Stack{}, Assembly{})); diff != "" {
		t.Errorf("Load() mismatch (-want +got):\n%s", diff)
	}
}

// TestLoadFixtures loads each broken assembly under testdata/ (one directory per case) and compares the
// rendered diagnostics with testdata/TestLoadFixtures.golden.
func TestLoadFixtures(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "fuzz" {
			continue
		}
		a, ds := Load(filepath.Join("testdata", e.Name()))
		b.WriteString("== " + e.Name())
		if a == nil {
			b.WriteString(" (no assembly)")
		}
		b.WriteString("\n")
		for _, l := range lines(ds) {
			b.WriteString(l + "\n")
		}
	}
	golden.Assert(t, b.String(), t.Name()+".golden")
}

// sharedAssemblies is where CI checks out the shared samples, beside the repository.
const sharedAssemblies = "../../shared/assemblies"

func TestLoadSharedAssemblies(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(sharedAssemblies); err != nil {
		t.Skipf("shared assemblies not checked out: %v", err)
	}
	type stack struct {
		ID        string
		Resources int
		Outputs   int
		Deps      []string
		Missing   bool
		Legacy    bool
	}
	invalidType := func(id string) string {
		return `error: MyStack.json: resources.` + id + `.type: invalid type "test::Resource": want Provider::Domain::Type; for example "PowerDNS::DNS::Zone"`
	}
	tests := []struct {
		dir    string
		stacks []stack
		errors []string // relative to the assembly directory
	}{
		{
			dir:    "cdkx-docs-cloud-assembly",
			stacks: []stack{{ID: "NetworkStack", Resources: 2, Legacy: true}, {ID: "ComputeStack", Missing: true}},
			errors: []string{`error: manifest.json: artifacts.ComputeStack.properties.templateFile: template file "ComputeStack.json" not found`},
		},
		{dir: "cdkx-rules-legacy-provider-env", stacks: []stack{{ID: "HetznerStack", Resources: 2, Legacy: true}}},
		{dir: "cdkx-spec-cross-stack", stacks: []stack{
			{ID: "NetworkStack", Resources: 1, Outputs: 1}, {ID: "ServerStack", Resources: 1, Deps: []string{"NetworkStack"}}}},
		{
			dir:    "cdkx-spec-dependson",
			stacks: []stack{{ID: "MyStack", Resources: 3}},
			errors: []string{invalidType("ResA"), invalidType("ResB"), invalidType("ResC")},
		},
		{dir: "cdkx-spec-stack-with-outputs", stacks: []stack{{ID: "MyStack", Outputs: 2}}},
		{dir: "cdkx-spec-stack-with-resources", stacks: []stack{{ID: "MyStack", Resources: 2}}},
		{dir: "synth-docs-concepts-asset/cdkx.out", stacks: []stack{{ID: "Network", Resources: 1}}},
		{dir: "synth-hetzner-e2e/cdkx.out", stacks: []stack{
			{ID: "Networking", Resources: 9, Outputs: 4}, {ID: "Compute", Resources: 8, Outputs: 2, Deps: []string{"Networking"}}}},
		{dir: "synth-hetzner-it-network-topology/cdkx.out", stacks: []stack{{ID: "HetznerNetworkStack", Resources: 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(sharedAssemblies, tt.dir)
			a, ds := Load(dir)
			if a == nil {
				t.Fatalf("Load(%q) = nil, %v", dir, lines(ds))
			}
			var got []stack
			for _, s := range a.Stacks {
				got = append(got, stack{s.ID, len(s.Resources), len(s.Outputs), s.Dependencies, s.Missing, s.Legacy})
			}
			if diff := cmp.Diff(tt.stacks, got); diff != "" {
				t.Errorf("Load(%q) stacks mismatch (-want +got):\n%s", dir, diff)
			}
			gotErrors := lines(ds.Errors())
			for i := range gotErrors {
				gotErrors[i] = strings.ReplaceAll(gotErrors[i], dir+string(filepath.Separator), "")
			}
			if diff := cmp.Diff(tt.errors, gotErrors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Load(%q) errors mismatch (-want +got):\n%s", dir, diff)
			}
		})
	}
}

// exampleDNS is the example assembly of the repository.
const exampleDNS = "../testdata/examples/dns/cdkx.out"

func TestLoadExampleDNS(t *testing.T) {
	t.Parallel()
	a, ds := Load(exampleDNS)
	if len(ds) != 0 {
		t.Fatalf("Load(%q) diagnostics = %v, want none", exampleDNS, lines(ds))
	}
	type stack struct {
		ID        string
		Resources int
		Outputs   []string
		Deps      []string
	}
	var got []stack
	for _, s := range a.Stacks {
		keys, _ := outputKeys(s)
		got = append(got, stack{s.ID, len(s.Resources), keys, s.Dependencies})
		if diff := cmp.Diff(sortedUnique(s.OutputKeys), keys); diff != "" {
			t.Errorf("stack %s: manifest outputKeys and template outputs differ (-manifest +template):\n%s", s.ID, diff)
		}
	}
	want := []stack{
		{ID: "Zones", Resources: 4, Outputs: []string{"Settings", "ZoneId", "ZoneName"}},
		{ID: "App", Resources: 9, Outputs: []string{"ApiFqdn", "WwwFqdn"}, Deps: []string{"Zones"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load(%q) stacks mismatch (-want +got):\n%s", exampleDNS, diff)
	}
}

func TestLoadDeepNesting(t *testing.T) {
	t.Parallel()
	// The token sits 5 levels below the lists: the template, resources, R, properties and itself.
	nested := func(depth int) string {
		return `{"resources": {"R": {"type": "A::B::C", "properties": {"p": ` +
			strings.Repeat("[", depth) + `{"ref": "R", "attr": "x"}` + strings.Repeat("]", depth) + `}}}}`
	}
	_, ds := loadFiles(t, map[string]string{"manifest.json": manifest("A"), "A.json": nested(MaxDepth - 5)})
	if len(ds) != 0 {
		t.Errorf("Load(%d levels) = %v, want no diagnostics", MaxDepth, lines(ds))
	}
	// The error points at the first '[' or '{' too deep; encoding/json's own limit (10,000) is not reached
	// first.
	for _, depth := range []int{MaxDepth - 4, 20000} {
		_, ds = loadFiles(t, map[string]string{"manifest.json": manifest("A"), "A.json": nested(depth)})
		col := len(`{"resources": {"R": {"type": "A::B::C", "properties": {"p": `) + MaxDepth - 4 + 1
		want := []string{fmt.Sprintf("error: cdkx.out/A.json:1:%d: lists and objects nested more than 1000 deep; "+
			"no synthesizer writes such nesting: check what wrote this file", col)}
		if diff := cmp.Diff(want, lines(ds)); diff != "" {
			t.Errorf("Load(%d levels) mismatch (-want +got):\n%s", depth+5, diff)
		}
	}
}

func TestTooDeep(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth)
	tests := []struct {
		in   string
		want int64
	}{
		{deep + strings.Repeat("]", MaxDepth), -1},
		{deep + "{", MaxDepth},
		{`["` + strings.Repeat("[", 2*MaxDepth) + `"]`, -1},        // inside a string
		{`["\"` + strings.Repeat("{", 2*MaxDepth) + `"]`, -1},      // after an escaped quote
		{`["\\"` + deep + "]", int64(len(`["\\"`)) + MaxDepth - 1}, // after an escaped backslash
		{strings.Repeat("[]", 3*MaxDepth), -1},
	}
	for _, tt := range tests {
		if got := tooDeep([]byte(tt.in)); got != tt.want {
			t.Errorf("tooDeep(%.20q…) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestPosition(t *testing.T) {
	t.Parallel()
	data := []byte("{\n  \"é\": x\n}")
	tests := []struct {
		offset            int64
		wantLine, wantCol int
	}{
		{0, 1, 1},
		{1, 1, 1},
		{2, 1, 2},
		{3, 2, 1},
		{10, 2, 7}, // the x: "é" is two bytes but one column
		{100, 3, 2},
	}
	for _, tt := range tests {
		line, col := position(data, tt.offset)
		if line != tt.wantLine || col != tt.wantCol {
			t.Errorf("position(%d) = %d:%d, want %d:%d", tt.offset, line, col, tt.wantLine, tt.wantCol)
		}
	}
}

func TestSemverMajor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in        string
		wantMajor int
		wantOK    bool
	}{
		{"1.0.0", 1, true},
		{"1.12.3-beta.1+sha.5", 1, true},
		{"0.5.0", 0, true},
		{"2.0.0", 2, true},
		{"99999999999999999999.0.0", -1, true},
		{"1.0", 0, false},
		{"v1.0.0", 0, false},
		{"01.0.0", 0, false},
		{"1.0.0-", 0, false},
		{"1.0.0+", 0, false},
		{"1.0.0-a..b", 0, false},
		{"1.0.0-a_b", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		major, ok := semverMajor(tt.in)
		if major != tt.wantMajor || ok != tt.wantOK {
			t.Errorf("semverMajor(%q) = %d, %t, want %d, %t", tt.in, major, ok, tt.wantMajor, tt.wantOK)
		}
	}
}

func TestDiagnosticsAreSorted(t *testing.T) {
	t.Parallel()
	_, ds := Load(filepath.Join("testdata", "broken-app"))
	sorted := append(diag.Diagnostics(nil), ds...)
	sorted.Sort()
	if diff := cmp.Diff(sorted, ds); diff != "" {
		t.Errorf("Load() diagnostics not sorted (-sorted +got):\n%s", diff)
	}
}

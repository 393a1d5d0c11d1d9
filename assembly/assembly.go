// Package assembly reads and validates a cloud assembly: cdkx.out/manifest.json and its stack templates.
//
// The format is described in docs/cloud-assembly.md. Load never stops at the first problem: it
// returns every diagnostic of one pass, each with the file and JSON path it concerns.
package assembly

import (
	"sync"

	"github.com/cdkx-dev/cdkx/pkg/resource"
)

// SupportedMajorVersion is the manifest format major version cdkx reads.
const SupportedMajorVersion = 1

// Assembly is a loaded cloud assembly.
type Assembly struct {
	// Dir is the assembly directory as given (e.g. "cdkx.out"), or what names the assembly in diagnostics
	// when it was loaded from files (LoadFiles).
	Dir string
	// AssetDir is the directory that holds this run's copy of the assets (ResolveAsset): the assembly
	// directory, absolute with symbolic links resolved, when loaded from it (Load); "" when loaded from
	// files (LoadFiles) until the caller writes the assets out and sets it.
	AssetDir string
	// Version is the manifest's format version, e.g. "1.0.0".
	Version string
	// Stacks are in manifest order.
	Stacks []*Stack
	// Assets are the cdkx:asset artifacts, in manifest order.
	Assets []*Asset
	// LocalFiles are the IDs of cdkx:local-files artifacts (listed, never deployed).
	LocalFiles []string

	assets assetSource // where the assets were read from (AssetFiles)

	assetOnce sync.Once
	assetIdx  assetIndex // Assets by directory name, built by Asset

	mu      sync.Mutex        // guards byID and indexed
	byID    map[string]*Stack // Stacks by ID, the first of duplicates
	indexed int               // len(Stacks) when byID was built
}

// Stack returns the stack with the given artifact ID (the first one, should two share it), or nil. It
// indexes Stacks on first use and again whenever stacks were appended since, so a lookup is O(1) and
// planning N stacks stays linear; it is safe for concurrent use.
func (a *Assembly) Stack(id string) *Stack {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil || a.indexed != len(a.Stacks) {
		a.byID = make(map[string]*Stack, len(a.Stacks))
		for _, s := range a.Stacks {
			if _, dup := a.byID[s.ID]; !dup {
				a.byID[s.ID] = s
			}
		}
		a.indexed = len(a.Stacks)
	}
	return a.byID[id]
}

// Stack is one cdkx:stack artifact and its template.
type Stack struct {
	// ID is the artifact ID (construct path with "/" → "-"); it names the stack in state.
	ID string
	// DisplayName is the manifest's displayName, or ID when it has none.
	DisplayName string
	// TemplateFile is the template's path relative to the assembly directory.
	TemplateFile string
	// File is the template's path as shown in diagnostics (Dir joined with TemplateFile).
	File string
	// Dependencies are the stacks to deploy first: the manifest's plus those found through stackRef
	// tokens anywhere in the template (outputs included), sorted, without duplicates.
	Dependencies []string
	// OutputKeys are the outputs the manifest declares.
	OutputKeys []string
	// Resources are sorted by logical ID.
	Resources []*Resource
	// Outputs are keyed by output key.
	Outputs map[string]*Output
	// Legacy is set when the template uses the flat layout (top level is the map of resources).
	Legacy bool
	// Missing is set when the template file could not be read or parsed; the stack has no resources then.
	Missing bool

	indexOnce sync.Once
	index     map[string]*Resource // by logical ID, built by Resource

	// recorded is what Load's decoder found in each of Resources (see recordedAt); Validate drops it.
	recorded []recorded
}

// Resource returns the resource with the given logical ID, or nil. The first call indexes Resources, which
// must not change afterwards; it is safe for concurrent use.
func (s *Stack) Resource(logicalID string) *Resource {
	s.indexOnce.Do(func() {
		s.index = make(map[string]*Resource, len(s.Resources))
		for _, r := range s.Resources {
			if _, dup := s.index[r.LogicalID]; !dup {
				s.index[r.LogicalID] = r
			}
		}
	})
	return s.index[logicalID]
}

// Resource is one entry of a template's resources.
type Resource struct {
	LogicalID string
	// Type is "Provider::Domain::Type".
	Type string
	// Provider is the template's provider, or the first segment of Type lower-cased when absent.
	Provider string
	// Properties may hold tokens anywhere; see Tokens.
	Properties resource.Properties
	Metadata   map[string]any
	// DependsOn are logical IDs in the same stack, as written.
	DependsOn []string
	// Implied are logical IDs in the same stack that the resource comes after because its provider's
	// schema says so (resource.Schema.After), set by Imply; the planner orders them like DependsOn.
	Implied []string
	// Path is the resource's JSON path in its template, e.g. "resources.WebA1B2C3D4" ("WebA1B2C3D4" in
	// the legacy flat layout).
	Path string
	// AssetPaths are the property paths (relative to Properties, e.g. "cloudInit", "mounts[0].source")
	// whose value Load rewrote from an absolute path into an asset to the asset's machine-independent
	// form (see Assembly.Asset), in the order found.
	AssetPaths []string
	// ProviderFromType is set when the template has no "provider" key and Provider was derived from Type.
	ProviderFromType bool
}

// Output is one entry of a template's outputs.
type Output struct {
	Key         string
	Value       any
	Description string
	// Path is the output's JSON path, e.g. "outputs.NetworkId".
	Path string
}

// Asset is a cdkx:asset artifact: a staged file or directory.
type Asset struct {
	ID string
	// Hash is the hex SHA-256 of the asset's contents (see Load for how a directory is hashed).
	Hash string
	// Path is relative to the assembly directory, slash-separated: "assets/asset.<hash>/<file name>" for
	// file packaging, "assets/asset.<hash>" for directory packaging.
	Path      string
	Packaging string // file | directory
	// Used is set when a resource property refers to the asset (Resource.AssetPaths); Load verified its
	// hash then.
	Used bool
}

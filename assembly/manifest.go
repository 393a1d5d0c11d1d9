package assembly

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// Artifact types of the manifest.
const (
	artifactStack      = "cdkx:stack"
	artifactAsset      = "cdkx:asset"
	artifactLocalFiles = "cdkx:local-files"
)

// parseManifest reads manifest.json's bytes; file names it in diagnostics; a leading UTF-8 byte order mark
// is ignored. The stacks it returns have their manifest fields set (Dependencies as the manifest lists
// them, without unknown stacks) but no template yet. It returns nil when the manifest is not valid JSON,
// not an object, or of an unsupported major version.
func parseManifest(file string, data []byte) (*Assembly, diag.Diagnostics) {
	f := &fields{file: file}
	data = trimBOM(data)
	root, found, err := decode(data)
	if err != nil {
		return nil, diag.Diagnostics{jsonError(file, data, err)}
	}
	top, ok := root.(*object)
	if !ok {
		f.errorf("", "the manifest must be a JSON object, got %s", describe(root))
		return nil, f.ds
	}
	a := &Assembly{}
	if !f.version(top, a) {
		return nil, f.ds
	}
	f.duplicates(found.dups, "artifacts", "artifact ID")
	f.numbers(found.numbers)
	f.unknownKeys("", top, "version", "artifacts")
	if v, ok := f.required("", top, "artifacts"); ok {
		if arts, ok := f.object("artifacts", v); ok {
			for i, id := range arts.keys {
				f.artifact(a, id, arts.vals[i])
			}
		}
	}
	f.manifestDependencies(a)
	return a, f.ds
}

// version sets a.Version and reports a missing or malformed version. It returns false when the major
// version is not SupportedMajorVersion: the rest of the manifest cannot be interpreted then.
func (f *fields) version(top *object, a *Assembly) bool {
	v, ok := f.required("", top, "version")
	if !ok {
		f.detail("want \"version\": \"%d.0.0\"; reading the manifest as version %d", SupportedMajorVersion, SupportedMajorVersion)
		return true
	}
	s, ok := f.string("version", v)
	if !ok {
		return true
	}
	a.Version = s
	major, ok := semverMajor(s)
	switch {
	case !ok:
		f.errorf("version", "invalid version %q: want a semantic version such as \"%d.0.0\"", s, SupportedMajorVersion)
	case major != SupportedMajorVersion:
		f.errorf("version", "unsupported manifest version %q: cdkx reads version %d.x.x", s, SupportedMajorVersion)
		f.detail("synthesize the app with a cdkx release that writes manifest version %d, or use a cdkx that reads %s",
			SupportedMajorVersion, s)
		return false
	}
	return true
}

// semverMajor returns the major version of a semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD];
// ok is false when v is not one. A major too large for an int is returned as -1.
func semverMajor(v string) (major int, ok bool) {
	rest, build, hasBuild := strings.Cut(v, "+")
	if hasBuild && !identifiers(build) {
		return 0, false
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	if hasPre && !identifiers(pre) {
		return 0, false
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return 0, false
	}
	for _, p := range parts {
		if !numeric(p) {
			return 0, false
		}
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return -1, true
	}
	return major, true
}

// numeric reports whether s is a decimal number without leading zeros.
func numeric(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// identifiers reports whether s is a dot-separated list of non-empty [0-9A-Za-z-] identifiers.
func identifiers(s string) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" || strings.Trim(id, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-") != "" {
			return false
		}
	}
	return true
}

// artifact reads one entry of the manifest's artifacts into a.
func (f *fields) artifact(a *Assembly, id string, v any) {
	path := JoinPath("artifacts", id)
	o, ok := f.object(path, v)
	if !ok {
		return
	}
	if id == "" {
		f.errorf(path, "artifact ID must not be empty")
		return
	}
	f.id(path, "artifact ID", id) // reported; the artifact is still read
	t, ok := f.required(path, o, "type")
	if !ok {
		return
	}
	typ, ok := f.string(path+".type", t)
	if !ok {
		return
	}
	switch typ {
	case artifactStack:
		a.Stacks = append(a.Stacks, f.stack(path, id, o))
	case artifactAsset:
		if asset := f.asset(path, id, o); asset != nil {
			a.Assets = append(a.Assets, asset)
		}
	case artifactLocalFiles:
		a.LocalFiles = append(a.LocalFiles, id)
	default:
		f.errorf(path+".type", "unknown artifact type %q", typ)
		f.detail("cdkx reads %s, %s and %s artifacts", artifactStack, artifactAsset, artifactLocalFiles)
	}
}

// stack reads a cdkx:stack artifact. A stack without a usable templateFile is returned with Missing set.
func (f *fields) stack(path, id string, o *object) *Stack {
	f.unknownKeys(path, o, "type", "properties", "displayName", "dependencies", "outputKeys", "provider", "environment")
	for _, legacy := range []string{"provider", "environment"} {
		if o.has(legacy) {
			f.warnf(JoinPath(path, legacy), "%q is ignored", legacy)
			f.detail("older manifests carried it per stack; each resource of the template names its provider")
		}
	}
	s := &Stack{ID: id, DisplayName: id, Missing: true}
	if name := f.optionalName(path, o, "displayName"); name != "" {
		s.DisplayName = name
	}
	s.Dependencies = f.strings(path, o, "dependencies")
	s.OutputKeys = f.strings(path, o, "outputKeys")
	if props, ok := f.properties(path, o); ok {
		f.unknownKeys(path+".properties", props, "templateFile")
		s.TemplateFile = f.localFile(path+".properties", props, "templateFile")
		s.Missing = s.TemplateFile == ""
	}
	return s
}

// asset reads a cdkx:asset artifact, or returns nil when a property is missing or wrong.
func (f *fields) asset(path, id string, o *object) *Asset {
	f.unknownKeys(path, o, "type", "properties", "displayName")
	props, ok := f.properties(path, o)
	if !ok {
		return nil
	}
	path += ".properties"
	f.unknownKeys(path, props, "hash", "path", "packaging")
	a := &Asset{ID: id, Path: f.localFile(path, props, "path")}
	if v, ok := f.required(path, props, "hash"); ok {
		a.Hash, _ = f.name(path+".hash", v)
	}
	if v, ok := f.required(path, props, "packaging"); ok {
		a.Packaging = f.packaging(path+".packaging", v)
	}
	if a.Hash == "" || a.Path == "" || a.Packaging == "" {
		return nil
	}
	return a
}

// packaging returns v when it is "file" or "directory", else reports it and returns "".
func (f *fields) packaging(path string, v any) string {
	s, ok := f.string(path, v)
	if ok && s != "file" && s != "directory" {
		f.errorf(path, "unknown packaging %q: want \"file\" or \"directory\"", s)
		return ""
	}
	return s
}

// properties returns the artifact's properties object, reporting when it is missing or not an object.
func (f *fields) properties(path string, o *object) (*object, bool) {
	v, ok := f.required(path, o, "properties")
	if !ok {
		return nil, false
	}
	return f.object(path+".properties", v)
}

// localFile returns the string at key of props (at path): a path relative to the assembly directory that
// stays inside it. It returns "" (and reports why) when there is no such path.
func (f *fields) localFile(path string, props *object, key string) string {
	v, ok := f.required(path, props, key)
	if !ok {
		return ""
	}
	path = JoinPath(path, key)
	name, ok := f.name(path, v)
	if !ok {
		return ""
	}
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		f.errorf(path, "%q is not a path inside the assembly directory", name)
		return ""
	}
	return name
}

// manifestDependencies reports manifest dependencies that name no stack (or the stack itself) and drops
// them from Dependencies.
func (f *fields) manifestDependencies(a *Assembly) {
	for _, s := range a.Stacks {
		kept := s.Dependencies[:0]
		for i, dep := range s.Dependencies {
			path := fmt.Sprintf("artifacts.%s.dependencies[%d]", s.ID, i)
			switch {
			case dep == s.ID:
				f.errorf(path, "stack %s depends on itself", s.ID)
			case a.Stack(dep) == nil:
				f.errorf(path, "unknown stack %q%s", dep, suggestion(dep, stackIDs(a)))
				f.detail("dependencies name stacks of this manifest: %s", listOrNone(stackIDs(a)))
			default:
				kept = append(kept, dep)
			}
		}
		s.Dependencies = kept
	}
}

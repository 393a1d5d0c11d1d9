package assembly

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// ManifestFile is the name of the assembly's index inside the assembly directory.
const ManifestFile = "manifest.json"

// Load reads dir/manifest.json and the template of every stack it lists, and checks the references between
// resources and stacks (dependsOn, {ref, attr}, {stackRef, outputKey}, manifest dependencies).
//
// It never stops at the first problem: the diagnostics are every problem of one pass, sorted (errors and
// warnings; see diag.Diagnostics.HasErrors). Each names the file as dir joined with the file's name
// ("cdkx.out/App.json") and the JSON path inside it. The assembly is nil only when the manifest cannot be
// read, is not valid JSON or not an object, or is of a major version other than SupportedMajorVersion;
// otherwise it is returned with what could be read, and stacks whose template is missing or unreadable
// have Missing set.
//
// The files of an assembly are untrusted input. Load reads only regular files that resolve inside dir
// (symbolic links within dir are followed), at most MaxFileSize each and MaxAssemblySize in all; anything
// else (a link out of dir, a FIFO, a device, a directory, a larger file) is an error diagnostic naming the
// file. A UTF-8 byte order mark at the start of a file is ignored.
//
// Assets: a property string (at any depth) that is an absolute path (POSIX "/…", Windows "C:\…", "C:/…"
// or "\\server\…") with a segment asset.<hash> naming a cdkx:asset artifact of the manifest — the path
// of the asset on the machine that ran synth — is rewritten to the asset's machine-independent form, its
// path relative to dir ("assets/asset.<hash>/cloud-init.yaml"; for a directory asset, its directory
// joined with the rest of the path), and recorded in Resource.AssetPaths. Each asset so used is hashed
// once and must match the manifest's hash: a file asset's SHA-256, or a directory asset's hash as the
// TypeScript cdkx computes it (see hashAsset). Assets no property uses are not read. A path naming an
// asset.<64 hex digits> the manifest does not declare, a missing asset and a mismatch are errors at the
// property. Asset files are streamed, not counted in MaxAssemblySize.
func Load(dir string) (*Assembly, diag.Diagnostics) {
	a, _, ds := LoadWithFiles(dir)
	return a, ds
}

// load is Load with the file system behind readFile, so that tests and fuzzing work on bytes. readFile
// takes a file's name relative to dir, in the OS's form; assets reads the assets (nil: none can be read).
func load(dir string, readFile func(name string) ([]byte, error), assets assetSource) (*Assembly, diag.Diagnostics) {
	file := filepath.Join(dir, ManifestFile)
	data, err := readFile(ManifestFile)
	if err != nil {
		return nil, diag.Diagnostics{manifestError(file, err)}
	}
	a, ds := parseManifest(file, data)
	if a == nil {
		ds.Sort()
		return nil, ds
	}
	a.Dir, a.assets = dir, assets
	for _, s := range a.Stacks {
		ds = append(ds, loadTemplate(a, s, file, readFile)...)
	}
	ds = append(ds, rewriteAssets(a, assets)...)
	ds = append(ds, link(a)...)
	ds.Sort()
	return a, ds
}

// manifestError describes a manifest that could not be read.
func manifestError(file string, err error) diag.Diagnostic {
	d := readError(file, "", "manifest", err)
	if d.Detail == "" {
		d.Detail = "synthesize the app first, or pass the directory that holds manifest.json"
	}
	return d
}

// loadTemplate reads and parses the template of s; manifest names the manifest file for diagnostics.
func loadTemplate(a *Assembly, s *Stack, manifest string, readFile func(string) ([]byte, error)) diag.Diagnostics {
	if s.TemplateFile == "" {
		return nil // reported with the manifest
	}
	name := filepath.FromSlash(s.TemplateFile)
	s.File = filepath.Join(a.Dir, name)
	data, err := readFile(name)
	if err != nil {
		s.Missing = true
		what := fmt.Sprintf("template file %q", s.File)
		return diag.Diagnostics{readError(manifest, "artifacts."+s.ID+".properties.templateFile", what, err)}
	}
	t, ds := parseTemplate(s.File, data)
	if t == nil {
		s.Missing = true
		return ds
	}
	s.Resources, s.Outputs, s.Legacy, s.recorded = t.resources, t.outputs, t.legacy, t.recorded
	return ds
}

// LoadWithFiles is Load that also returns the bytes of every file it read (the manifest and the
// templates), by slash-separated name relative to dir: what a deployment's snapshot pins, and what
// LoadFiles loads the same assembly from. Nil when the manifest could not be read.
func LoadWithFiles(dir string) (*Assembly, map[string][]byte, diag.Diagnostics) {
	r, err := openAssembly(dir)
	if err != nil {
		return nil, nil, diag.Diagnostics{manifestError(filepath.Join(dir, ManifestFile), err)}
	}
	defer r.close()
	files := map[string][]byte{}
	src := &dirAssets{dir: r.real, root: r.root}
	a, ds := load(dir, func(name string) ([]byte, error) {
		data, err := r.read(name)
		if err == nil {
			files[filepath.ToSlash(name)] = data
		}
		return data, err
	}, src)
	if a == nil {
		return nil, nil, ds
	}
	a.AssetDir = r.real
	return a, files, ds
}

// LoadFiles is Load over files already read (a deployment's snapshot): names are relative to the
// assembly directory, slash-separated ("manifest.json", "App.json"), and dir names the assembly in
// diagnostics. A file the manifest names that files lacks is reported as missing. Sizes are not checked
// again: the files passed Load's checks when they were read (LoadWithFiles). files may hold the used
// assets' files too, by their names relative to the assembly directory (Assembly.AssetFiles): their hashes
// are verified as Load verifies them; the assembly's AssetDir is "" (the caller writes the assets out).
func LoadFiles(dir string, files map[string][]byte) (*Assembly, diag.Diagnostics) {
	return load(dir, func(name string) ([]byte, error) {
		data, ok := files[filepath.ToSlash(name)]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return data, nil
	}, fileAssets(files))
}

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
func Load(dir string) (*Assembly, diag.Diagnostics) {
	a, _, ds := LoadWithFiles(dir)
	return a, ds
}

// load is Load with the file system behind readFile, so that tests and fuzzing work on bytes. readFile
// takes a file's name relative to dir, in the OS's form.
func load(dir string, readFile func(name string) ([]byte, error)) (*Assembly, diag.Diagnostics) {
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
	a.Dir = dir
	for _, s := range a.Stacks {
		ds = append(ds, loadTemplate(a, s, file, readFile)...)
	}
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
	s.Resources, s.Outputs, s.Legacy = t.resources, t.outputs, t.legacy
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
	a, ds := load(dir, func(name string) ([]byte, error) {
		data, err := r.read(name)
		if err == nil {
			files[filepath.ToSlash(name)] = data
		}
		return data, err
	})
	if a == nil {
		return nil, nil, ds
	}
	return a, files, ds
}

// LoadFiles is Load over files already read (a deployment's snapshot): names are relative to the
// assembly directory, slash-separated ("manifest.json", "App.json"), and dir names the assembly in
// diagnostics. A file the manifest names that files lacks is reported as missing. Sizes are not checked
// again: the files passed Load's checks when they were read (LoadWithFiles).
func LoadFiles(dir string, files map[string][]byte) (*Assembly, diag.Diagnostics) {
	return load(dir, func(name string) ([]byte, error) {
		data, ok := files[filepath.ToSlash(name)]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return data, nil
	})
}

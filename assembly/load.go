package assembly

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
func Load(dir string) (*Assembly, diag.Diagnostics) {
	return load(dir, os.ReadFile)
}

// load is Load with the file system behind readFile, so that tests and fuzzing work on bytes.
func load(dir string, readFile func(name string) ([]byte, error)) (*Assembly, diag.Diagnostics) {
	file := filepath.Join(dir, ManifestFile)
	data, err := readFile(file)
	if err != nil {
		ds := diag.Diagnostics{readError(file, "", "manifest", err)}
		ds[0].Detail = "synthesize the app first, or pass the directory that holds manifest.json"
		return nil, ds
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

// loadTemplate reads and parses the template of s; manifest names the manifest file for diagnostics.
func loadTemplate(a *Assembly, s *Stack, manifest string, readFile func(string) ([]byte, error)) diag.Diagnostics {
	if s.TemplateFile == "" {
		return nil // reported with the manifest
	}
	s.File = filepath.Join(a.Dir, filepath.FromSlash(s.TemplateFile))
	data, err := readFile(s.File)
	if err != nil {
		s.Missing = true
		what := fmt.Sprintf("template file %q", s.File)
		return diag.Diagnostics{readError(manifest, "artifacts."+s.ID+".properties.templateFile", what, err)}
	}
	s.Template = data
	t, ds := parseTemplate(s.File, data)
	if t == nil {
		s.Missing = true
		return ds
	}
	s.Resources, s.Outputs, s.Legacy = t.resources, t.outputs, t.legacy
	return ds
}

// readError describes a file that could not be read: what names it ("manifest", "template file …"); file
// and path say where it is named.
func readError(file, path, what string, err error) diag.Diagnostic {
	summary := what + " not found"
	if !errors.Is(err, fs.ErrNotExist) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // what names the file already
		}
		summary = "cannot read " + what + ": " + err.Error()
	}
	return diag.Diagnostic{Severity: diag.Error, File: file, Path: path, Summary: summary}
}

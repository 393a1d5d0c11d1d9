//go:build unix

package assembly

import (
	netpkg "net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// secret is the content of a file outside the assembly that links try to reach.
const secret = `{"resources": {"Leaked": {"type": "Cdkx::Core::Data"}}, "root:x:0:0": "secret"}`

// loadWithin runs Load(dir) and fails the test when it does not return within 10 s (a FIFO blocked it).
func loadWithin(t *testing.T, dir string) (*Assembly, diag.Diagnostics) {
	t.Helper()
	type result struct {
		a  *Assembly
		ds diag.Diagnostics
	}
	done := make(chan result, 1)
	go func() {
		a, ds := Load(dir)
		done <- result{a, ds}
	}()
	select {
	case r := <-done:
		return r.a, r.ds
	case <-time.After(10 * time.Second):
		t.Fatalf("Load(%q) did not return within 10 s", dir)
		return nil, nil
	}
}

// writeFiles writes files (slash-separated names) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesFiles(t *testing.T) {
	t.Parallel()
	refusedRead := `error: %[1]s/manifest.json: artifacts.A.properties.templateFile: template file "%[1]s/A.json" `
	tests := []struct {
		name string
		// setup completes the assembly in dir, which holds manifest("A") unless the name starts with
		// "manifest"; outside is a directory beside it holding secret.json.
		setup func(t *testing.T, dir, outside string)
		want  []string // %[1]s is dir, %[2]s is outside
	}{
		{
			name: "template links to a file outside",
			setup: func(t *testing.T, dir, outside string) {
				symlink(t, filepath.Join(outside, "secret.json"), filepath.Join(dir, "A.json"))
			},
			want: []string{refusedRead + `is a link to "%[2]s/secret.json", outside the assembly directory; ` +
				`cdkx reads only files inside the assembly directory: copy the file into it, or synthesize the app again`},
		},
		{
			name: "template links outside through a relative link",
			setup: func(t *testing.T, dir, outside string) {
				symlink(t, "../outside/secret.json", filepath.Join(dir, "A.json"))
			},
			want: []string{refusedRead + `is a link to "%[2]s/secret.json", outside the assembly directory; ` +
				`cdkx reads only files inside the assembly directory: copy the file into it, or synthesize the app again`},
		},
		{
			name: "template links to /dev/zero",
			setup: func(t *testing.T, dir, _ string) {
				symlink(t, "/dev/zero", filepath.Join(dir, "A.json"))
			},
			want: []string{refusedRead + `is a link to "/dev/zero", outside the assembly directory; ` +
				`cdkx reads only files inside the assembly directory: copy the file into it, or synthesize the app again`},
		},
		{
			name: "template is a FIFO",
			setup: func(t *testing.T, dir, _ string) {
				if err := syscall.Mkfifo(filepath.Join(dir, "A.json"), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			},
			want: []string{refusedRead + `is a named pipe, not a regular file; a cloud assembly holds regular JSON files only: synthesize the app again`},
		},
		{
			name: "template is a directory",
			setup: func(t *testing.T, dir, _ string) {
				if err := os.Mkdir(filepath.Join(dir, "A.json"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{refusedRead + `is a directory, not a regular file; a cloud assembly holds regular JSON files only: synthesize the app again`},
		},
		{
			name: "template is a socket",
			setup: func(t *testing.T, dir, _ string) {
				l, err := netpkg.Listen("unix", filepath.Join(dir, "A.json"))
				if err != nil {
					t.Skipf("unix socket: %v", err) // the path may be too long
				}
				t.Cleanup(func() { l.Close() })
			},
			want: []string{refusedRead + `is a socket, not a regular file; a cloud assembly holds regular JSON files only: synthesize the app again`},
		},
		{
			name: "template is larger than MaxFileSize",
			setup: func(t *testing.T, dir, _ string) {
				writeFiles(t, dir, map[string]string{"A.json": ""})
				if err := os.Truncate(filepath.Join(dir, "A.json"), MaxFileSize+1); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{refusedRead + `is larger than 64 MiB, the most cdkx reads; split the stack, or check what wrote this file`},
		},
		{
			name: "a directory on the way links outside",
			setup: func(t *testing.T, dir, outside string) {
				writeFiles(t, dir, map[string]string{"manifest.json": `{"version": "1.0.0", "artifacts": {
					"A": {"type": "cdkx:stack", "properties": {"templateFile": "sub/secret.json"}}}}`}) // replaces manifest("A")
				symlink(t, outside, filepath.Join(dir, "sub"))
			},
			want: []string{`error: %[1]s/manifest.json: artifacts.A.properties.templateFile: template file "%[1]s/sub/secret.json" ` +
				`is a link to "%[2]s/secret.json", outside the assembly directory; ` +
				`cdkx reads only files inside the assembly directory: copy the file into it, or synthesize the app again`},
		},
		{
			name: "manifest links outside",
			setup: func(t *testing.T, dir, outside string) {
				symlink(t, filepath.Join(outside, "secret.json"), filepath.Join(dir, "manifest.json"))
			},
			want: []string{`error: %[1]s/manifest.json: manifest is a link to "%[2]s/secret.json", outside the assembly directory; ` +
				`cdkx reads only files inside the assembly directory: copy the file into it, or synthesize the app again`},
		},
		{
			name: "manifest is a FIFO",
			setup: func(t *testing.T, dir, _ string) {
				if err := syscall.Mkfifo(filepath.Join(dir, "manifest.json"), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
			},
			want: []string{`error: %[1]s/manifest.json: manifest is a named pipe, not a regular file; a cloud assembly holds regular JSON files only: synthesize the app again`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			dir, outside := filepath.Join(base, "cdkx.out"), filepath.Join(base, "outside")
			writeFiles(t, outside, map[string]string{"secret.json": secret})
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tt.name, "manifest") {
				writeFiles(t, dir, map[string]string{"manifest.json": manifest("A")})
			}
			tt.setup(t, dir, outside)
			_, ds := loadWithin(t, dir)
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = strings.NewReplacer("%[1]s", dir, "%[2]s", outside).Replace(w)
			}
			if diff := cmp.Diff(want, lines(ds)); diff != "" {
				t.Errorf("Load() diagnostics mismatch (-want +got):\n%s", diff)
			}
			if got := strings.Join(lines(ds), "\n"); strings.Contains(got, "Leaked") || strings.Contains(got, "root:x") {
				t.Errorf("Load() diagnostics show the content of a file outside the assembly:\n%s", got)
			}
		})
	}
}

func TestLoadFollowsLinksInside(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cdkx.out")
	writeFiles(t, dir, map[string]string{"manifest.json": manifest("A", "B"), "real/A.json": net, "real/B.json": `{}`})
	symlink(t, "real/A.json", filepath.Join(dir, "A.json"))                        // relative
	symlink(t, filepath.Join(dir, "real", "B.json"), filepath.Join(dir, "B.json")) // absolute
	a, ds := loadWithin(t, dir)
	if len(ds) != 0 {
		t.Fatalf("Load() diagnostics = %v, want none", lines(ds))
	}
	if got := len(a.Stack("A").Resources); got != 2 {
		t.Errorf("Load() stack A has %d resources, want 2", got)
	}
	// The assembly directory itself may be a link.
	link := filepath.Join(t.TempDir(), "out")
	symlink(t, dir, link)
	if _, ds := loadWithin(t, link); len(ds) != 0 {
		t.Errorf("Load(link to the assembly) diagnostics = %v, want none", lines(ds))
	}
}

// TestOpenFlagsDoNotBlockOnFIFO checks what protects a read from a FIFO swapped in after the check: the
// open returns at once, and the opened file's mode is checked.
func TestOpenFlagsDoNotBlockOnFIFO(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, openFlags, 0)
		if err == nil {
			info, statErr := f.Stat()
			f.Close()
			if statErr != nil {
				err = statErr
			} else {
				err = checkFile(info, MaxAssemblySize)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if want := "is a named pipe, not a regular file"; err == nil || err.Error() != want {
			t.Errorf("checkFile(opened FIFO) = %v, want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO with openFlags blocked")
	}
}

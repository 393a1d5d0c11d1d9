package assembly

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoadAcceptsByteOrderMark(t *testing.T) {
	t.Parallel()
	bom := "\xEF\xBB\xBF"
	a, ds := loadFiles(t, map[string]string{"manifest.json": bom + manifest("A"), "A.json": bom + net})
	if len(ds) != 0 {
		t.Fatalf("Load() diagnostics = %v, want none", lines(ds))
	}
	if got := len(a.Stack("A").Resources); got != 2 {
		t.Errorf("Load() stack A has %d resources, want 2", got)
	}
	// Positions of syntax errors count from after the mark.
	_, ds = loadFiles(t, map[string]string{"manifest.json": bom + manifest("A"), "A.json": bom + `{,}`})
	want := []string{`error: cdkx.out/A.json:1:2: invalid JSON: invalid character ',' looking for beginning of object key string`}
	if diff := cmp.Diff(want, lines(ds)); diff != "" {
		t.Errorf("Load() diagnostics mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mode fs.FileMode
		size int64
		left int64
		want string // "" for no error
	}{
		{name: "regular", size: 10, left: MaxAssemblySize},
		{name: "largest", size: MaxFileSize, left: MaxAssemblySize},
		{name: "too large", size: MaxFileSize + 1, left: MaxAssemblySize, want: "is larger than 64 MiB, the most cdkx reads"},
		{name: "past the assembly's budget", size: 11, left: 10, want: "would bring the assembly past 256 MiB, the most cdkx reads"},
		{name: "character device", mode: fs.ModeDevice | fs.ModeCharDevice, left: MaxAssemblySize, want: "is a device, not a regular file"},
		{name: "block device", mode: fs.ModeDevice, left: MaxAssemblySize, want: "is a device, not a regular file"},
		{name: "FIFO", mode: fs.ModeNamedPipe, left: MaxAssemblySize, want: "is a named pipe, not a regular file"},
		{name: "socket", mode: fs.ModeSocket, left: MaxAssemblySize, want: "is a socket, not a regular file"},
		{name: "directory", mode: fs.ModeDir, left: MaxAssemblySize, want: "is a directory, not a regular file"},
		{name: "irregular", mode: fs.ModeIrregular, left: MaxAssemblySize, want: "is an irregular file, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{"f": {Mode: tt.mode}}
			info, err := fsys.Stat("f")
			if err != nil {
				t.Fatal(err)
			}
			info = sized{info, tt.size}
			got := ""
			if err := checkFile(info, tt.left); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("checkFile(%v, %d bytes, %d left) = %q, want %q", tt.mode, tt.size, tt.left, got, tt.want)
			}
		})
	}
}

// sized is a FileInfo of another size.
type sized struct {
	fs.FileInfo
	size int64
}

func (s sized) Size() int64 { return s.size }

func TestFileReaderBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "A.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := openAssembly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.left = 5
	if _, err := r.read("A.json"); err != nil {
		t.Fatalf("read(A.json) with 5 bytes left = %v", err)
	}
	_, err = r.read("A.json") // 2 bytes left
	if want := "would bring the assembly past 256 MiB, the most cdkx reads"; err == nil || err.Error() != want {
		t.Errorf("read(A.json) with 2 bytes left = %v, want %q", err, want)
	}
}

func TestLoadMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cdkx.out")
	a, ds := Load(dir)
	want := []string{"error: " + filepath.Join(dir, ManifestFile) + ": manifest not found; " +
		"synthesize the app first, or pass the directory that holds manifest.json"}
	if diff := cmp.Diff(want, lines(ds)); diff != "" || a != nil {
		t.Errorf("Load(%q) = %v, diagnostics mismatch (-want +got):\n%s", dir, a, diff)
	}
}

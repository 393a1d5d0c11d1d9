package assembly

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// MaxFileSize is the largest manifest or template Load reads, 64 MiB: real templates are a few hundred
// KiB at most, and a decoded template takes about fifteen times its size in memory.
const MaxFileSize = 64 << 20

// MaxAssemblySize is the most Load reads from one assembly, manifest and templates together, 256 MiB:
// a manifest that lists one large template under many stacks must not make Load read it again and again.
const MaxAssemblySize = 256 << 20

// utf8BOM is the byte order mark some editors write at the start of a UTF-8 file; Load ignores it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// trimBOM returns data without a leading UTF-8 byte order mark.
func trimBOM(data []byte) []byte {
	return bytes.TrimPrefix(data, utf8BOM)
}

// refusedError is a file of the assembly that Load does not read; the file's name is not part of it.
type refusedError struct {
	problem string // e.g. "is a named pipe, not a regular file"
	detail  string // what to do
}

func (e *refusedError) Error() string { return e.problem }

// fileReader reads the files of one assembly directory: only regular files that resolve inside it (through
// symbolic links or not), never more than MaxFileSize each nor MaxAssemblySize in all. Names are relative
// to the directory.
type fileReader struct {
	real string // the directory, absolute, with every symbolic link resolved
	root *os.Root
	left int64 // of MaxAssemblySize
}

// openAssembly opens dir for reading its files; the caller closes the reader with close.
func openAssembly(dir string) (*fileReader, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &fileReader{real: real, root: root, left: MaxAssemblySize}, nil
}

// close releases the directory; closing what was only read is best effort.
func (r *fileReader) close() { _ = r.root.Close() }

// read returns the bytes of the file name (relative to the assembly directory, in the OS's form).
//
// The file is resolved first: a path that leads outside the directory, or to anything but a regular file,
// is refused before it is opened (opening a FIFO blocks, a device such as /dev/zero never ends). The file
// is then opened inside the directory's os.Root, without blocking, and checked again through the opened
// descriptor, so that nothing swapped in between the check and the open is read.
func (r *fileReader) read(name string) ([]byte, error) {
	target, err := filepath.EvalSymlinks(filepath.Join(r.real, name))
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(r.real, target)
	if err != nil || !filepath.IsLocal(rel) {
		return nil, &refusedError{
			problem: fmt.Sprintf("is a link to %q, outside the assembly directory", target),
			detail:  "cdkx reads only files inside the assembly directory: copy the file into it, or synthesize the app again",
		}
	}
	info, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	if err := checkFile(info, r.left); err != nil {
		return nil, err
	}
	f, err := r.root.OpenFile(rel, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkFile(opened, r.left); err != nil {
		return nil, err
	}
	if !os.SameFile(info, opened) {
		return nil, &refusedError{problem: "changed while cdkx was reading it", detail: "run cdkx again once the app is synthesized"}
	}
	// Read into one buffer of the size the file has (and a little more, to see that it did not grow):
	// io.ReadAll would double its buffer from 512 bytes up, allocating twice a large template's size.
	limit := min(MaxFileSize, r.left) + 1
	var buf bytes.Buffer
	buf.Grow(int(min(opened.Size()+bytes.MinRead, limit)))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit)); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if err := checkSize(int64(len(data)), r.left); err != nil {
		return nil, err
	}
	r.left -= int64(len(data))
	return data, nil
}

// checkFile refuses what is not a regular file, and files larger than MaxFileSize or than left bytes.
func checkFile(info fs.FileInfo, left int64) error {
	mode := info.Mode()
	if !mode.IsRegular() {
		return &refusedError{
			problem: "is " + describeMode(mode) + ", not a regular file",
			detail:  "a cloud assembly holds regular JSON files only: synthesize the app again",
		}
	}
	return checkSize(info.Size(), left)
}

// checkSize refuses a file of size bytes when it is larger than MaxFileSize or than left bytes.
func checkSize(size, left int64) error {
	switch {
	case size > MaxFileSize:
		return &refusedError{
			problem: fmt.Sprintf("is larger than %d MiB, the most cdkx reads", MaxFileSize>>20),
			detail:  "split the stack, or check what wrote this file",
		}
	case size > left:
		return &refusedError{
			problem: fmt.Sprintf("would bring the assembly past %d MiB, the most cdkx reads", MaxAssemblySize>>20),
			detail:  "split the app into several assemblies, or check what wrote the manifest",
		}
	}
	return nil
}

// describeMode names a kind of file that is not regular, e.g. "a named pipe".
func describeMode(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	case mode&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "a special file"
}

// readError describes a file that could not be read: what names it ("manifest", "template file …"); file
// and path say where it is named.
func readError(file, path, what string, err error) diag.Diagnostic {
	d := diag.Diagnostic{Severity: diag.Error, File: file, Path: path}
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		d.Summary, d.Detail = what+" "+refused.problem, refused.detail
	case errors.Is(err, fs.ErrNotExist):
		d.Summary = what + " not found"
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // what names the file already
		}
		d.Summary = "cannot read " + what + ": " + err.Error()
	}
	return d
}

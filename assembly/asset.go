package assembly

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/cdkx-dev/cdkx/pkg/diag"
)

// assetSegmentPrefix starts the name of an asset's directory, "asset.<hash>" (the TypeScript cdkx stages
// each asset under cdkx.out/assets/asset.<hash>/).
const assetSegmentPrefix = "asset."

// maxAssetDepth bounds how deep a directory asset is walked (symbolic links are followed, as the
// TypeScript cdkx follows them when it hashes: a link to a parent must not walk forever).
const maxAssetDepth = 64

// Dir returns the asset's directory relative to the assembly directory, slash-separated: Path up to and
// including its segment asset.<Hash> (e.g. "assets/asset.bc66…"); "" when Path has no such segment.
func (s *Asset) Dir() string {
	segs := strings.Split(s.Path, "/")
	for i, seg := range segs {
		if seg == assetSegmentPrefix+s.Hash {
			return strings.Join(segs[:i+1], "/")
		}
	}
	return ""
}

// assetIndex finds the assets of an assembly by the name of their directory, "asset.<hash>".
type assetIndex map[string]*Asset

func newAssetIndex(a *Assembly) assetIndex {
	idx := assetIndex{}
	for _, s := range a.Assets {
		if d := s.Dir(); d != "" {
			if _, dup := idx[path.Base(d)]; !dup {
				idx[path.Base(d)] = s
			}
		}
	}
	return idx
}

// Asset returns the asset of the machine-independent form rel ("assets/asset.<hash>/cloud-init.yaml",
// slash-separated, relative to the assembly directory, as Load rewrites asset paths): the asset whose Path
// is rel, or whose directory rel is or lies under (a directory asset's files). Nil when rel names none.
// The first call indexes Assets, which must not change afterwards; it is safe for concurrent use.
func (a *Assembly) Asset(rel string) *Asset {
	if !strings.Contains(rel, assetSegmentPrefix) {
		return nil
	}
	a.assetOnce.Do(func() { a.assetIdx = newAssetIndex(a) })
	for seg := range strings.SplitSeq(rel, "/") {
		s := a.assetIdx[seg]
		if s == nil {
			continue
		}
		if d := s.Dir(); rel == s.Path || rel == d || strings.HasPrefix(rel, d+"/") {
			return s
		}
		return nil
	}
	return nil
}

// ResolveAsset returns the absolute path, on this machine, of the machine-independent asset form rel
// (see Asset): AssetDir joined with rel. ok is false when rel names no asset of the assembly or when the
// assembly has no copy of its assets on disk (AssetDir is ""). It is what the engine calls just before
// each provider call (engine.Options.Assets).
func (a *Assembly) ResolveAsset(rel string) (abs string, ok bool) {
	if a.AssetDir == "" || a.Asset(rel) == nil || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", false
	}
	return filepath.Join(a.AssetDir, filepath.FromSlash(rel)), true
}

// UsedAssets returns the assets a property refers to (Asset.Used), in manifest order.
func (a *Assembly) UsedAssets() []*Asset {
	var out []*Asset
	for _, s := range a.Assets {
		if s.Used {
			out = append(out, s)
		}
	}
	return out
}

// AssetMismatchError is an asset whose files are not what its hash says.
type AssetMismatchError struct {
	ID        string // artifact ID
	Path      string // the artifact's path
	Packaging string
	Want, Got string // hex SHA-256: the manifest's and the files'
}

func (e *AssetMismatchError) Error() string {
	return fmt.Sprintf("asset %s (%s, %s packaging) has hash %s, not the manifest's %s: it changed after synth; synthesize the app again",
		e.ID, e.Path, e.Packaging, e.Got, e.Want)
}

// VerifyAssets hashes the files of the used assets (UsedAssets) where the engine will find them, under
// AssetDir, and returns the first error: a missing file, or an *AssetMismatchError. A run calls it once,
// before any provider call, so that what a provider reads is what the manifest's hash names.
func (a *Assembly) VerifyAssets() error {
	if a.AssetDir == "" {
		if len(a.UsedAssets()) == 0 {
			return nil
		}
		return errors.New("the assembly's assets have no copy on this machine")
	}
	src, err := openDirAssets(a.AssetDir)
	if err != nil {
		return err
	}
	defer src.close()
	for _, s := range a.UsedAssets() {
		got, err := hashAsset(src, s)
		if err != nil {
			return fmt.Errorf("asset %s: %w", s.ID, err)
		}
		if got != s.Hash {
			return &AssetMismatchError{ID: s.ID, Path: s.Path, Packaging: s.Packaging, Want: s.Hash, Got: got}
		}
	}
	return nil
}

// AssetFiles returns the bytes of the used assets' files (UsedAssets), by slash-separated name relative to
// the assembly directory ("assets/asset.<hash>/cloud-init.yaml"), as read from the assembly's source (its
// directory, or the files it was loaded from), each asset's hash verified against the bytes returned.
// Errors: a file that cannot be read, an *AssetMismatchError, or an error once the files would pass max
// bytes in all (the most a deployment's snapshot holds), wrapping ErrAssetsTooLarge.
func (a *Assembly) AssetFiles(maxBytes int64) (map[string][]byte, error) {
	out := map[string][]byte{}
	used := a.UsedAssets()
	if len(used) == 0 {
		return out, nil
	}
	src := a.assets
	if src == nil {
		return nil, errors.New("the assembly's assets were not loaded")
	}
	if d, ok := src.(*dirAssets); ok {
		var err error
		if src, err = openDirAssets(d.dir); err != nil {
			return nil, err
		}
		defer src.close()
	}
	var total int64
	for _, s := range used {
		files, err := assetFiles(src, s)
		if err != nil {
			return nil, fmt.Errorf("asset %s: %w", s.ID, err)
		}
		sum := fileAssets{}
		for _, name := range files {
			data, err := src.read(name, maxBytes-total)
			if err != nil {
				return nil, fmt.Errorf("asset %s: %w", s.ID, err)
			}
			total += int64(len(data))
			sum[name] = data
		}
		got, err := hashAsset(sum, s)
		if err != nil {
			return nil, fmt.Errorf("asset %s: %w", s.ID, err)
		}
		if got != s.Hash {
			return nil, &AssetMismatchError{ID: s.ID, Path: s.Path, Packaging: s.Packaging, Want: s.Hash, Got: got}
		}
		for n, d := range sum {
			out[n] = d
		}
	}
	return out, nil
}

// ErrAssetsTooLarge is returned (wrapped, after the file's name) by Assembly.AssetFiles when the files
// would pass its maximum.
var ErrAssetsTooLarge = errors.New("would pass the most bytes of assets allowed")

// assetSource reads the files of an assembly's assets; names are slash-separated, relative to the
// assembly directory.
type assetSource interface {
	// open returns the file's contents; it refuses what is not a regular file.
	open(name string) (io.ReadCloser, error)
	// read returns the file's bytes, or an error wrapping ErrAssetsTooLarge when it holds more than max bytes.
	read(name string, max int64) ([]byte, error)
	// list returns the regular files under dir, recursively, by name; fs.ErrNotExist when dir is none.
	list(dir string) ([]string, error)
	close()
}

// hashAsset returns the hex SHA-256 of s's files as the TypeScript cdkx computes it (AssetHasher in
// cdk-x/cdkx packages/core/src/lib/asset/asset-hasher.ts): for "file" packaging the file's bytes; for
// "directory" packaging, over each file under the directory in UTF-16 order of its slash-separated path
// relative to the directory, the line "<path>\x00<hex SHA-256 of its bytes>\n".
func hashAsset(src assetSource, s *Asset) (string, error) {
	if s.Packaging == "file" {
		return hashFile(src, s.Path)
	}
	dir := s.Path
	files, err := src.list(dir)
	if err != nil {
		return "", err
	}
	rels := make([]string, len(files))
	for i, f := range files {
		rels[i] = strings.TrimPrefix(f, dir+"/")
	}
	slices.SortFunc(rels, compareUTF16)
	h := sha256.New()
	for _, rel := range rels {
		sum, err := hashFile(src, dir+"/"+rel)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\n", rel, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// assetFiles returns the names of s's files.
func assetFiles(src assetSource, s *Asset) ([]string, error) {
	if s.Packaging == "file" {
		return []string{s.Path}, nil
	}
	return src.list(s.Path)
}

func hashFile(src assetSource, name string) (string, error) {
	f, err := src.open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// compareUTF16 orders strings as JavaScript's < does: by UTF-16 code units.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// dirAssets reads assets from an assembly directory, inside its os.Root: links that lead out of it are
// refused.
type dirAssets struct {
	dir  string // absolute, symbolic links resolved
	root *os.Root
}

func openDirAssets(dir string) (*dirAssets, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &dirAssets{dir: dir, root: root}, nil
}

func (d *dirAssets) close() { _ = d.root.Close() }

func (d *dirAssets) open(name string) (io.ReadCloser, error) {
	f, err := d.root.OpenFile(filepath.FromSlash(name), openFlags, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s, not a regular file", name, describeMode(info.Mode()))
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func (d *dirAssets) read(name string, max int64) ([]byte, error) {
	f, err := d.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %w", name, ErrAssetsTooLarge)
	}
	return data, nil
}

func (d *dirAssets) list(dir string) ([]string, error) {
	var out []string
	var walk func(name string, depth int) error
	walk = func(name string, depth int) error {
		if depth > maxAssetDepth {
			return fmt.Errorf("%s is nested more than %d directories deep (a link to a parent?)", name, maxAssetDepth)
		}
		entries, err := fs.ReadDir(d.root.FS(), name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			child := name + "/" + e.Name()
			info, err := fs.Stat(d.root.FS(), child) // follows links, as the TypeScript cdkx does
			if err != nil {
				return err
			}
			switch {
			case info.IsDir():
				if err := walk(child, depth+1); err != nil {
					return err
				}
			case info.Mode().IsRegular():
				out = append(out, child)
			}
		}
		return nil
	}
	info, err := fs.Stat(d.root.FS(), dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if err := walk(dir, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// fileAssets reads assets from files already read (a deployment's snapshot), by slash-separated name.
type fileAssets map[string][]byte

func (m fileAssets) open(name string) (io.ReadCloser, error) {
	data, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (m fileAssets) read(name string, max int64) ([]byte, error) {
	data, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %w", name, ErrAssetsTooLarge)
	}
	return data, nil
}

func (m fileAssets) list(dir string) ([]string, error) {
	var out []string
	for name := range m {
		if strings.HasPrefix(name, dir+"/") {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	slices.Sort(out)
	return out, nil
}

func (fileAssets) close() {}

// assetRewriter rewrites the asset paths of an assembly's properties (rewriteAssets).
type assetRewriter struct {
	a      *Assembly
	idx    assetIndex
	src    assetSource
	hashes map[*Asset]error // verified assets: nil, or why not
	ds     diag.Diagnostics
}

// rewriteAssets replaces, in every resource's properties, each string that is an absolute path (POSIX
// "/…", Windows "C:\…", "C:/…" or "\\server\…") with a segment asset.<hash> by the asset's
// machine-independent form, relative to the assembly directory: the artifact's path for a file asset
// (the path must name its file), the asset's directory joined with the rest of the path for a directory
// asset. The property paths rewritten are recorded in Resource.AssetPaths and each asset used is marked
// Used and verified once (its hash, from src). A path naming an asset.<64 hex digits> that the manifest
// does not declare, a path that does not lead into its asset, a missing file and a hash mismatch are
// errors at the property.
func rewriteAssets(a *Assembly, src assetSource) diag.Diagnostics {
	w := &assetRewriter{a: a, idx: newAssetIndex(a), src: src, hashes: map[*Asset]error{}}
	at := &jsonPath{}
	for _, s := range a.Stacks {
		for i, r := range s.Resources {
			if rec, ok := s.recordedAt(i); ok && !rec.assetHint {
				continue // no string of it can be an asset path
			}
			at.reset("")
			for k, v := range r.Properties {
				at.pushKey(k)
				r.Properties[k] = w.value(s, r, at, v)
				at.pop()
			}
			slices.Sort(r.AssetPaths)
		}
	}
	return w.ds
}

// value returns v (at the property path at, relative to r's properties, rendered only when needed) with
// its asset paths rewritten.
func (w *assetRewriter) value(s *Stack, r *Resource, at *jsonPath, v any) any {
	switch t := v.(type) {
	case string:
		rel, ok := w.path(s, r, at, t)
		if !ok {
			return t
		}
		r.AssetPaths = append(r.AssetPaths, at.String())
		return rel
	case map[string]any:
		for k, e := range t {
			at.pushKey(k)
			t[k] = w.value(s, r, at, e)
			at.pop()
		}
	case []any:
		for i, e := range t {
			at.pushIndex(i)
			t[i] = w.value(s, r, at, e)
			at.pop()
		}
	}
	return v
}

// path returns the machine-independent form of p when p is an absolute path into an asset.
func (w *assetRewriter) path(s *Stack, r *Resource, at *jsonPath, p string) (string, bool) {
	if !strings.Contains(p, assetSegmentPrefix) {
		return "", false
	}
	segs, ok := absSegments(p)
	if !ok {
		return "", false
	}
	i := len(segs) - 1
	for ; i >= 0; i-- {
		if _, ok := w.idx[segs[i]]; ok || isAssetName(segs[i]) {
			break
		}
	}
	if i < 0 {
		return "", false
	}
	where := JoinPath(r.Path+".properties", at.String())
	asset := w.idx[segs[i]]
	if asset == nil {
		w.ds.Errorf(s.File, where, "%q names asset %s, which the manifest does not declare", p, segs[i])
		w.ds[len(w.ds)-1].Detail = fmt.Sprintf("the manifest has no cdkx:asset artifact with hash %s (%s): synthesize the app again, and deploy the whole cdkx.out it writes",
			strings.TrimPrefix(segs[i], assetSegmentPrefix), declared(w.a))
		return "", false
	}
	var rest []string
	for _, seg := range segs[i+1:] {
		switch seg {
		case "", ".":
			continue
		case "..":
			w.ds.Errorf(s.File, where, "%q leads out of asset %s", p, asset.ID)
			return "", false
		}
		rest = append(rest, seg)
	}
	dir := asset.Dir()
	rel := dir
	if len(rest) > 0 {
		rel = dir + "/" + strings.Join(rest, "/")
	}
	if asset.Packaging == "file" && rel != dir && rel != asset.Path {
		w.ds.Errorf(s.File, where, "%q is not the file of asset %s: it holds %s only", p, asset.ID, strings.TrimPrefix(asset.Path, dir+"/"))
		w.ds[len(w.ds)-1].Detail = "synthesize the app again, or name the asset's file"
		return "", false
	}
	w.verify(s, where, asset)
	return rel, true
}

// verify checks asset's hash once, and reports a problem at each property that uses it.
func (w *assetRewriter) verify(s *Stack, where string, asset *Asset) {
	asset.Used = true
	err, done := w.hashes[asset]
	if !done {
		var got string
		if w.src == nil {
			err = fs.ErrNotExist
		} else if got, err = hashAsset(w.src, asset); err == nil && got != asset.Hash {
			err = &AssetMismatchError{ID: asset.ID, Path: asset.Path, Packaging: asset.Packaging, Want: asset.Hash, Got: got}
		}
		w.hashes[asset] = err
	}
	if err == nil {
		return
	}
	var mismatch *AssetMismatchError
	switch {
	case errors.As(err, &mismatch):
		w.ds.Errorf(s.File, where, "asset %s does not match its hash: want %s, got %s", asset.ID, mismatch.Want, mismatch.Got)
		w.ds[len(w.ds)-1].Detail = fmt.Sprintf("%s changed after synth: synthesize the app again", asset.Path)
	case errors.Is(err, fs.ErrNotExist):
		w.ds.Errorf(s.File, where, "asset %s is missing: %s not found in the assembly", asset.ID, asset.Path)
		w.ds[len(w.ds)-1].Detail = "synthesize the app again, and deploy the whole cdkx.out it writes (assets included)"
	default:
		w.ds.Errorf(s.File, where, "cannot verify asset %s (%s): %v", asset.ID, asset.Path, err)
	}
}

// declared lists the assets' directory names for a detail, or says there are none.
func declared(a *Assembly) string {
	var names []string
	for _, s := range a.Assets {
		if d := s.Dir(); d != "" {
			names = append(names, path.Base(d))
		}
	}
	if len(names) == 0 {
		return "it declares no asset"
	}
	return "it declares " + strings.Join(names, ", ")
}

// isAssetName reports whether seg has the shape of a staged asset's directory: asset.<64 hex digits>.
func isAssetName(seg string) bool {
	h, ok := strings.CutPrefix(seg, assetSegmentPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// absSegments splits an absolute path into its segments: a POSIX path ("/home/…") at "/", a Windows path
// ("C:\…", "C:/…", "\\server\share\…") at either separator, the drive or leading separators dropped. ok
// is false for anything else (a relative path, inline text).
func absSegments(p string) ([]string, bool) {
	switch {
	case strings.HasPrefix(p, `\\`):
		return strings.FieldsFunc(p, isSeparator), true
	case len(p) >= 3 && isDriveLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/'):
		return strings.FieldsFunc(p[3:], isSeparator), true
	case strings.HasPrefix(p, "/"):
		if strings.ContainsAny(p, "\n") {
			return nil, false // inline text that starts with a slash
		}
		return strings.Split(p[1:], "/"), true
	}
	return nil, false
}

func isSeparator(r rune) bool { return r == '/' || r == '\\' }

func isDriveLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

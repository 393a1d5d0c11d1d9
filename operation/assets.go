package operation

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cdkx-dev/cdkx/assembly"
)

// writeAssets writes the used assets' files of a, an assembly loaded from a snapshot whose files (Snapshot.Open)
// hold them, into a private temporary directory (0700, files 0600) and points a.AssetDir at it, so that the
// run's providers read exactly the snapshot's bytes. It returns the directory's removal, to call once the
// run is over; nothing is written (and the removal does nothing) when no property uses an asset.
func writeAssets(a *assembly.Assembly, files map[string][]byte) (func(), error) {
	used := a.UsedAssets()
	if len(used) == 0 {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "cdkx-assets-") // 0700
	if err != nil {
		return nil, fmt.Errorf("write the snapshot's assets: %w", err)
	}
	remove := func() { _ = os.RemoveAll(dir) }
	for _, s := range used {
		names := []string{s.Path}
		if s.Packaging == "directory" {
			names = names[:0]
			for name := range files {
				if len(name) > len(s.Path) && name[:len(s.Path)+1] == s.Path+"/" {
					names = append(names, name)
				}
			}
		}
		for _, name := range names {
			rel := filepath.FromSlash(name)
			data, ok := files[name]
			if !ok || !filepath.IsLocal(rel) {
				remove()
				return nil, fmt.Errorf("write the snapshot's assets: asset %s has no file %s in the snapshot", s.ID, name)
			}
			path := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				remove()
				return nil, fmt.Errorf("write the snapshot's assets: %w", err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				remove()
				return nil, fmt.Errorf("write the snapshot's assets: %w", err)
			}
		}
	}
	a.AssetDir = dir
	return remove, nil
}

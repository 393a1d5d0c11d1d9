// Package docs holds no code: its test checks that the repository's Markdown stands alone.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's root, from this directory.
const root = ".."

var (
	// inlineLink matches [text](target) and ![alt](target); the target ends at a space or ")".
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink matches a reference definition: [label]: target.
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	// autoLink matches <scheme:…> and <path>.
	autoLink = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]+)>`)
	// upPath matches a path that climbs out of its folder: ../x, ../../x.
	upPath = regexp.MustCompile(`(?:^|[\s("'\x60=:])((?:\.\./)+[^\s)"'\x60]*)`)
	// hostPath matches absolute paths of this machine's layout that a reader of the repository has not.
	hostPath = regexp.MustCompile(`(?:^|[\s("'\x60=:])(/(?:work|home|root|Users)/[^\s)"'\x60]*)`)
	// heading matches an ATX heading.
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// markdownFiles returns the Markdown files of the repository, relative to root, leaving out dependency
// and build folders (node_modules, vendor) and hidden ones (.git, .cdkx).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped but for "-" and "_", spaces as "-".
func slug(h string) string {
	h = strings.ToLower(strings.ReplaceAll(h, "`", ""))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading anchors of the Markdown file at path.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if m := heading.FindStringSubmatch(line); m != nil && !fenced {
			out[slug(m[1])] = true
		}
	}
	return out
}

// inside reports whether path (relative to root) stays inside the repository.
func inside(path string) bool {
	clean := filepath.Clean(path)
	return clean != ".." && !strings.HasPrefix(clean, "../") && !filepath.IsAbs(clean)
}

// TestMarkdownStandsAlone checks every Markdown file of the repository: no link or path leaves the
// repository (a relative path climbing above its root, an absolute file path or file: URL, a path of
// this machine such as /work/…), and every relative link names a file or folder that exists, with its
// #anchor when it points into Markdown.
func TestMarkdownStandsAlone(t *testing.T) {
	t.Parallel()
	files := markdownFiles(t)
	if len(files) < 3 {
		t.Fatalf("found %d Markdown files, want README.md and docs/*.md at least", len(files))
	}
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(file)
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			at := func(format string, args ...any) {
				t.Errorf("%s:%d: "+format, append([]any{file, i + 1}, args...)...)
			}
			for _, m := range upPath.FindAllStringSubmatch(line, -1) {
				if !inside(filepath.Join(dir, m[1])) {
					at("%s leaves the repository", m[1])
				}
			}
			for _, m := range hostPath.FindAllStringSubmatch(line, -1) {
				at("%s is a path of one machine, not of the repository", m[1])
			}
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			var targets []string
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			if m := refLink.FindStringSubmatch(line); m != nil {
				targets = append(targets, m[1])
			}
			for _, m := range autoLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				checkTarget(t, at, file, target)
			}
		}
	}
}

// checkTarget checks one link target of file.
func checkTarget(t *testing.T, at func(string, ...any), file, target string) {
	t.Helper()
	lower := strings.ToLower(target)
	switch {
	case strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "https://"), strings.HasPrefix(lower, "mailto:"):
		return
	case strings.HasPrefix(lower, "file:"), strings.HasPrefix(target, "/"):
		at("link %s is an absolute file path: link relative to the file instead", target)
		return
	case strings.Contains(target, "://"):
		at("link %s: use https:// or a relative path", target)
		return
	}
	path, anchor, _ := strings.Cut(target, "#")
	resolved := file
	if path != "" {
		resolved = filepath.Join(filepath.Dir(file), path)
		if !inside(resolved) {
			at("link %s leaves the repository", target)
			return
		}
		if _, err := os.Stat(filepath.Join(root, resolved)); err != nil {
			at("link %s: %s does not exist", target, resolved)
			return
		}
	}
	if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchors(t, filepath.Join(root, resolved))[anchor] {
		at("link %s: %s has no heading #%s", target, resolved, anchor)
	}
}

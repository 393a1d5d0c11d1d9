package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../../../.."

var (
	// envLiteral matches a string literal naming a variable cdkx or an adapter reads.
	envLiteral = regexp.MustCompile(`"((?:CDKX|PDNS|RABBITMQ|HCLOUD|MULTIPASS)_[A-Z0-9_]*[A-Z0-9])"`)
	// getenvLiteral matches getenv("NAME") with any name (CI, TERM, NO_COLOR, …).
	getenvLiteral = regexp.MustCompile(`(?i:getenv|LookupEnv)\("([A-Z][A-Z0-9_]*)"\)`)
	// viperKey matches a flag read through viper, which CDKX_<FLAG> sets too.
	viperKey = regexp.MustCompile(`\bv\.Get[A-Za-z]*\("([a-z-]+)"\)`)
)

// TestEnvironmentHelpComplete checks that every environment variable the program's source reads (tests,
// test helpers, fakes, e2e and testdata aside) is documented in `cdkx help environment`: literal names of
// the CDKX_, PDNS_, RABBITMQ_, HCLOUD_ and MULTIPASS_ families, every getenv("NAME"), and CDKX_<FLAG> of every flag
// LoadConfig reads through viper.
func TestEnvironmentHelpComplete(t *testing.T) {
	t.Parallel()
	read := map[string]string{} // name → a file that reads it
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case name == ".git", name == "e2e", name == "testdata", name == "bench", name == "node_modules",
				strings.HasSuffix(name, "test"), strings.HasSuffix(name, "fake"): // test helpers, fakes
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, re := range []*regexp.Regexp{envLiteral, getenvLiteral} {
			for _, m := range re.FindAllSubmatch(b, -1) {
				read[string(m[1])] = path
			}
		}
		if filepath.Base(path) == "config.go" && strings.HasSuffix(filepath.Dir(path), "cli") {
			for _, m := range viperKey.FindAllSubmatch(b, -1) {
				read["CDKX_"+strings.ToUpper(strings.ReplaceAll(string(m[1]), "-", "_"))] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{"CDKX_TOKEN", "CDKX_APP", "CDKX_VERBOSE", "PDNS_API_URL", "CI"} {
		if read[must] == "" {
			t.Fatalf("the scan found no read of %s: the test no longer sees the source", must)
		}
	}
	documented := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Z][A-Z0-9_]*[A-Z0-9]`).FindAllString(EnvironmentHelp, -1) {
		documented[w] = true
	}
	var missing []string
	for name, path := range read {
		if !documented[name] {
			missing = append(missing, name+" (read in "+strings.TrimPrefix(path, repoRoot+"/")+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("cdkx help environment does not document %s", m)
	}
}

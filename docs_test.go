package bucketgate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// mdHeading matches a Markdown heading line.
var mdHeading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// The README and docs/ stand alone: every link resolves inside the repository, to a
// file that exists and, for an anchor, to a heading of that file.
func TestDocLinksStayInTheRepository(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, "README.md", "events/README.md", "examples/README.md", "BENCHMARKS.md", "RELIABILITY.md")
	links := 0
	for _, doc := range docs {
		text := readFile(t, doc)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			links++
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s: link %s leaves the repository", doc, target)
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), path)
				if rel, err := filepath.Rel(".", file); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s: link %s points outside the repository", doc, target)
					continue
				}
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %s: %v", doc, target, err)
					continue
				}
			}
			if anchor != "" && !hasAnchor(readFile(t, file), anchor) {
				t.Errorf("%s: link %s: no heading %q in %s", doc, target, anchor, file)
			}
		}
	}
	if links < 5 {
		t.Fatalf("found %d links in %v: is the pattern right?", links, docs)
	}
}

// hasAnchor reports whether a heading of the Markdown text has the anchor GitHub gives
// it: lower case, spaces as hyphens, punctuation other than hyphens and underscores dropped.
func hasAnchor(text, anchor string) bool {
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

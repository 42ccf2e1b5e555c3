package docs_test

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

// The README and docs/ stand alone: every link resolves inside the repository (relative
// to its file, or to the root when it starts with /, as GitHub reads it), to a
// file that exists and, for an anchor, to a heading of that file.
func TestDocLinksStayInTheRepository(t *testing.T) {
	docs := append(docFiles(t), "BENCHMARKS.md", "RELIABILITY.md")
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
				if strings.HasPrefix(path, "/") { // from the repository's root, as GitHub reads it
					file = filepath.Clean(path[1:])
				}
				if rel, err := filepath.Rel(".", file); err != nil || strings.HasPrefix(rel, "..") { // file is relative to the root
					t.Errorf("%s: link %s points outside the repository", doc, target)
					continue
				}
				if _, err := os.Stat(inRoot(file)); err != nil {
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

// hasAnchor reports whether a heading of the Markdown text has anchor.
func hasAnchor(text, anchor string) bool {
	for _, m := range mdHeading.FindAllStringSubmatch(text, -1) {
		if anchorOf(m[1]) == anchor {
			return true
		}
	}
	return false
}

// anchorOf returns the anchor GitHub gives a heading: lower case, spaces as hyphens,
// punctuation other than hyphens and underscores dropped.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

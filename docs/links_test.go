package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mdLink matches an inline Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// mdHeading matches a Markdown heading line: its #s and its text.
var mdHeading = regexp.MustCompile(`^(#{1,6}) +(.+?) *$`)

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
	return slices.ContainsFunc(anchors(text), func(h heading) bool { return h.anchor == anchor })
}

// heading is a heading of a Markdown text and the anchor GitHub gives it.
type heading struct {
	level        int // 1 for #, 2 for ##, ...
	text, anchor string
}

// anchors returns the headings of the Markdown text with the anchors GitHub gives them,
// in order: a # line inside a code block is no heading, and a heading whose anchor is
// taken gets the first free -1, -2 suffix.
func anchors(text string) []heading {
	var out []heading
	seen := map[string]int{} // anchor: the suffixes tried after it
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if inBlock || m == nil {
			continue
		}
		base := anchorOf(m[2])
		anchor := base
		for _, taken := seen[anchor]; taken; _, taken = seen[anchor] {
			seen[base]++
			anchor = fmt.Sprintf("%s-%d", base, seen[base])
		}
		seen[anchor] = 0
		out = append(out, heading{level: len(m[1]), text: m[2], anchor: anchor})
	}
	return out
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

// hasAnchor finds the anchors a renderer gives: not a # line of a code block, and
// -1, -2 after a heading's repeats.
func TestHasAnchor(t *testing.T) {
	const doc = "# Guide\n\n## Usage\n\n```sh\n# install it\nmake run\n```\n\n  ```go\n## Fenced\n  ```\n\n## Usage\n\n### Usage\n"
	for _, tc := range []struct {
		name, anchor string
		want         bool
	}{
		{"a heading", "guide", true},
		{"the first of repeated headings", "usage", true},
		{"the second of repeated headings", "usage-1", true},
		{"the third of repeated headings, at another level", "usage-2", true},
		{"one repeat more than there are", "usage-3", false},
		{"a comment in a code block", "install-it", false},
		{"a # line in an indented code block", "fenced", false},
		{"no heading", "run", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hasAnchor(doc, tc.anchor); got != tc.want {
				t.Errorf("hasAnchor(#%s) = %v, want %v", tc.anchor, got, tc.want)
			}
		})
	}
}

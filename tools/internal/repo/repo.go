// Package repo finds the bucketgate repository that the tools measure: the directory
// holding the product's go.mod (module ProductModule), above the tools module.
package repo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ProductModule is the module path of the product's go.mod.
const ProductModule = "github.com/bucketgate/bucketgate"

// Root returns the directory of the product's go.mod, searching up from the working
// directory: from anywhere in the repository, tools/ included.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repository root: %w", err)
	}
	return RootAbove(wd)
}

// RootAbove returns the directory of the product's go.mod, searching up from dir.
func RootAbove(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if modulePath(filepath.Join(d, "go.mod")) == ProductModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s above %s", ProductModule, dir)
		}
	}
}

// modulePath returns the module path that the go.mod at path declares, or "" when
// there is none.
func modulePath(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

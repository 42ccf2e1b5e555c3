package benchreport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Pending is a section of the report that cannot be measured yet, and why.
type Pending struct {
	// Reason says what is missing, for the report.
	Reason string
}

// ModuleRoot returns the directory holding go.mod, searching up from the working
// directory.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("module root: %w", err)
	}
	return moduleRootAbove(wd)
}

// moduleRootAbove returns the directory holding go.mod, searching up from dir.
func moduleRootAbove(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// pendingUnlessBuilt reports, for a measurement not written yet, whether the code it
// measures (pkg, relative to root) is missing or only the measurement is.
func pendingUnlessBuilt(root, pkg, issue, measurement string) (Pending, error) {
	_, err := os.Stat(filepath.Join(root, pkg))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Pending{Reason: fmt.Sprintf("not built yet: %s does not exist (%s)", pkg, issue)}, nil
	case err != nil:
		return Pending{}, fmt.Errorf("look for %s: %w", pkg, err)
	}
	return Pending{Reason: fmt.Sprintf("%s exists, but %s is not wired into make bench yet", pkg, measurement)}, nil
}

// LambdaFunctions are the function packages whose bootstraps item 5 measures.
var LambdaFunctions = []string{"functions/authorizer", "functions/check"}

// BuiltFunctions returns those of LambdaFunctions that exist under root.
func BuiltFunctions(root string) ([]string, error) {
	var built []string
	for _, pkg := range LambdaFunctions {
		_, err := os.Stat(filepath.Join(root, pkg))
		switch {
		case err == nil:
			built = append(built, pkg)
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("look for %s: %w", pkg, err)
		}
	}
	return built, nil
}

// PendingSections returns the report's sections 4 and 6 as they stand in the tree at
// root: what is missing before they can be measured.
func PendingSections(root string) (authorizer, denyCache Pending, err error) {
	if authorizer, err = pendingUnlessBuilt(root, "functions/authorizer", "issue 4",
		"the handler benchmark with Redis stubbed out"); err != nil {
		return
	}
	denyCache, err = pendingUnlessBuilt(root, "internal/guard", "the deny cache",
		"the flood count of Redis calls per 1,000 requests")
	return
}

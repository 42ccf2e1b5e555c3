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

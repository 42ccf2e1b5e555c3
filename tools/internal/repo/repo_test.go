package repo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootAbove(t *testing.T) {
	dir := t.TempDir()
	nested := filepath.Join(dir, "tools", "stress")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "go.mod"), "module "+ProductModule+"\n\ngo 1.26\n")
	write(filepath.Join(dir, "tools", "go.mod"), "module "+ProductModule+"/tools\n")
	if got, err := RootAbove(nested); err != nil || got != dir {
		t.Errorf("RootAbove(%s) = %q, %v; want %s: the tools module's go.mod is not the product's", nested, got, err, dir)
	}
	if _, err := RootAbove(t.TempDir()); err == nil {
		t.Error("RootAbove found a product root where there is none")
	}
}

func TestRoot(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "functions", "authorizer")); err != nil {
		t.Errorf("Root = %s, which lacks functions/authorizer: %v", root, err)
	}
}

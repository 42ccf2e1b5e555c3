package settings_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// docPath holds the table of environment variables.
const docPath = "../../docs/configuration.md"

// The table of environment variables (docs/configuration.md) names every variable this
// package reads, with the default it applies.
func TestDocsListEveryVariable(t *testing.T) {
	readme, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{} // variable -> its default column
	for line := range strings.Lines(string(readme)) {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		defaults[name] = strings.TrimSpace(cells[2])
	}
	for _, name := range envConstants(t) {
		if _, ok := defaults[name]; !ok {
			t.Errorf("%s: the table of environment variables has no row for %s", docPath, name)
		}
	}
	for name, want := range map[string]string{
		settings.EnvCluster:           string(settings.ClusterAuto),
		settings.EnvTimeoutMS:         strconv.FormatInt(settings.DefaultTimeout.Milliseconds(), 10),
		settings.EnvFailMode:          settings.FailClosed,
		settings.EnvDenyCacheSize:     strconv.Itoa(settings.DefaultDenyCacheSize),
		settings.EnvNamespace:         settings.DefaultNamespace,
		settings.EnvStackName:         settings.DefaultStackName,
		settings.EnvAPIKeyHeader:      settings.DefaultAPIKeyHeader,
		settings.EnvLogLevel:          strings.ToLower(settings.DefaultLogLevel.String()),
		settings.EnvXRayDaemon:        settings.DefaultXRayDaemon,
		settings.EnvIPv6Prefix:        strconv.Itoa(settings.DefaultIPv6Prefix),
		settings.EnvRegistryCacheMS:   strconv.FormatInt(settings.DefaultRegistryCacheTTL.Milliseconds(), 10),
		settings.EnvRegistryCacheSize: strconv.Itoa(settings.DefaultRegistryCacheSize),
		settings.EnvRegistryTimeoutMS: strconv.FormatInt(settings.DefaultRegistryTimeout.Milliseconds(), 10),
		settings.EnvUsageDays:         strconv.Itoa(settings.DefaultUsageDays),
		settings.EnvUsageOfAddresses:  "true",
		settings.EnvIdempotencyMS:     strconv.FormatInt(settings.DefaultIdempotency.Milliseconds(), 10),
		settings.EnvMetricsFlushMS:    strconv.FormatInt(settings.DefaultMetricsFlush.Milliseconds(), 10),
		settings.EnvEventsTimeoutMS:   strconv.FormatInt(settings.DefaultEventsTimeout.Milliseconds(), 10),
	} {
		if got := defaults[name]; !strings.HasPrefix(got, "`"+want+"`") {
			t.Errorf("%s: %s defaults to %q, want `%s`", docPath, name, got, want)
		}
	}
}

// envConstants returns the values of the package's Env* constants: the variables it reads.
func envConstants(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "settings.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for i, id := range v.Names {
				if i >= len(v.Values) {
					continue
				}
				if lit, ok := v.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(id.Name, "Env") && lit.Kind == token.STRING {
					name, _ := strconv.Unquote(lit.Value)
					names = append(names, name)
				}
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("found %d Env constants in settings.go, want them all", len(names))
	}
	return names
}

package template_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sdkModule is the import path under which the AWS SDK for Go v2 keeps its service
// clients, one package a service.
const sdkModule = "github.com/aws/aws-sdk-go-v2/service/"

// iamPrefixes is the IAM prefix of the actions of each service client package the
// module's code may import (EventBridge's client is eventbridge, its actions events:).
var iamPrefixes = map[string]string{"cloudformation": "cloudformation", "dynamodb": "dynamodb", "eventbridge": "events", "lambda": "lambda",
	"secretsmanager": "secretsmanager"}

// grantsWithoutSDK are the actions of functionPolicy that no SDK call of the functions
// makes: elasticache:Connect authorizes the IAM token they sign themselves
// (internal/redisconn), Secrets Manager calls kms:Decrypt for their GetSecretValue, and
// Lambda itself takes lambdaNetworkActions for their network interfaces.
func grantsWithoutSDK() []string {
	out := []string{"elasticache:Connect", "kms:Decrypt"}
	for _, a := range lambdaNetworkActions {
		out = append(out, a.(string))
	}
	return out
}

// goFile is a parsed Go file of the module with its package's import path.
type goFile struct {
	pkg  string
	name string
	file *ast.File
}

// moduleFiles parses the module's own Go files (tests left out) that the packages pkgs
// build from, theirs and their dependencies'.
func moduleFiles(t *testing.T, pkgs ...string) []goFile {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-f",
		"{{if and (not .Standard) .Module}}{{if .Module.Main}}{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \"\\t\"}}{{end}}{{end}}"}, pkgs...)...)
	cmd.Dir = repoPath(".")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", pkgs, err)
	}
	var files []goFile
	fset := token.NewFileSet()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "\t")
		for _, name := range fields[2:] {
			file := filepath.Join(fields[1], name)
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, goFile{pkg: fields[0], name: file, file: f})
		}
	}
	return files
}

// importName is the name under which f imports the package path, or "" if it does not.
func importName(f *ast.File, importPath string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path.Base(p)
		}
	}
	return ""
}

// referenced says whether a file of files other than decl's names the top-level
// function decl of package pkg, or another declaration of its own package does.
func referenced(files []goFile, pkg string, decl *ast.FuncDecl) bool {
	found := false
	for _, g := range files {
		local := importName(g.file, pkg)
		ast.Inspect(g.file, func(n ast.Node) bool {
			if found || n == decl {
				return false
			}
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x, _ := n.X.(*ast.Ident)
				found = local != "" && x != nil && x.Name == local && n.Sel.Name == decl.Name.Name
			case *ast.Ident:
				found = g.pkg == pkg && n.Name == decl.Name.Name && n != decl.Name
			}
			return !found
		})
	}
	return found
}

// sdkOperations returns the IAM action (prefix:Operation) of every AWS SDK operation
// that the module's code built into the packages pkgs calls, each with the file that
// calls it: a function that names an <Operation>Input type of a service client, unless
// it is a top-level function that nothing built into pkgs names (registry.CreateTable,
// which bucketgate keys init alone calls, is built into the functions with its package).
func sdkOperations(t *testing.T, pkgs ...string) map[string]string {
	t.Helper()
	files := moduleFiles(t, pkgs...)
	ops := map[string]string{}
	for _, g := range files {
		clients := map[string]string{} // the name the file gives a client package -> its IAM prefix
		for _, imp := range g.file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			service, ok := strings.CutPrefix(p, sdkModule)
			if !ok || strings.Contains(service, "/") {
				continue
			}
			prefix, known := iamPrefixes[service]
			if !known {
				t.Fatalf("%s imports %s: give its IAM prefix in iamPrefixes", g.name, p)
			}
			clients[importName(g.file, p)] = prefix
		}
		for _, d := range g.file.Decls {
			decl, ok := d.(*ast.FuncDecl)
			if !ok || len(clients) == 0 {
				continue
			}
			var calls []string
			ast.Inspect(decl, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					x, _ := sel.X.(*ast.Ident)
					op, isInput := strings.CutSuffix(sel.Sel.Name, "Input")
					if x != nil && isInput && op != "" && clients[x.Name] != "" {
						calls = append(calls, clients[x.Name]+":"+op)
					}
				}
				return true
			})
			if len(calls) == 0 || (decl.Recv == nil && !referenced(files, g.pkg, decl)) {
				continue
			}
			for _, c := range calls {
				ops[c] = g.name
			}
		}
	}
	return ops
}

// The Go functions' grants are their code's calls: every AWS SDK operation that the code
// built into the functions calls is an action of functionPolicy (one missing would be
// denied on AWS alone, where no test runs), and every action of functionPolicy, under
// every condition, is one of those operations or one of grantsWithoutSDK.
func TestTemplateFunctionGrantsAreTheirCalls(t *testing.T) {
	var pkgs []string
	for _, name := range goFunctions(t) {
		pkgs = append(pkgs, "./functions/"+name)
	}
	called := sdkOperations(t, pkgs...)
	if len(called) == 0 {
		t.Fatalf("no SDK operation found in %v: is the search right?", pkgs)
	}
	var statements []map[string]any
	collectStatements(readTemplate(t, limiter)["Resources"].(map[string]any)[functionPolicy], &statements)
	granted := map[string]bool{}
	for _, s := range statements {
		switch a := s["Action"].(type) {
		case string:
			granted[a] = true
		case []any:
			for _, e := range a {
				granted[e.(string)] = true
			}
		default:
			t.Fatalf("%s: statement %v: Action neither a string nor a list", functionPolicy, s)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(called)) {
		if !granted[op] {
			t.Errorf("%s calls %s, which %s does not grant", called[op], op, functionPolicy)
		}
	}
	for _, a := range slices.Sorted(maps.Keys(granted)) {
		if _, ok := called[a]; !ok && !slices.Contains(grantsWithoutSDK(), a) {
			t.Errorf("%s grants %s, which no code of the functions calls", functionPolicy, a)
		}
	}
}

// Who may invoke what, as deployed (after the SAM transform): API Gateway alone, for an
// API of the stack alone (its SourceArn names the REST or the HTTP API), and never the
// check function or the operator function, which no resource policy opens; no function
// has a URL.
func TestTemplateInvokePermissions(t *testing.T) {
	resources := section(samTranslate(t, limiter), "Resources")
	n := 0
	for _, id := range slices.Sorted(maps.Keys(resources)) {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::Lambda::Url":
			t.Errorf("%s: a function URL", id)
		case "AWS::Lambda::Permission":
			n++
			source := jsonText(t, p["SourceArn"])
			ofAnAPI := false // the API by Ref, or in the Fn::Sub's text
			for _, api := range []string{"RestApi", "HttpApi"} {
				ofAnAPI = ofAnAPI || strings.Contains(source, jsonText(t, ref(api))) || strings.Contains(source, "${"+api+"}")
			}
			if p["Principal"] != "apigateway.amazonaws.com" || p["Action"] != "lambda:InvokeFunction" || !ofAnAPI {
				t.Errorf("%s: %v: want API Gateway to invoke, for an API of the stack alone", id, p)
			}
			for _, closed := range []string{"CheckFunction", operatorFunction} {
				if strings.Contains(jsonText(t, p["FunctionName"]), `"`+closed) {
					t.Errorf("%s opens %s: %v", id, closed, p["FunctionName"])
				}
			}
		}
	}
	if n < 4 {
		t.Fatalf("%d permissions: want the authorizer's and the sample backend's for both APIs", n)
	}
}

package authorizer

import "strings"

// defaultStage is the HTTP API stage served at the root of the API, with no path prefix.
const defaultStage = "$default"

// stripStage removes the "/<stage>" prefix that HTTP APIs put in front of the path of
// every stage but $default, so that route patterns match the same paths on every stage.
func stripStage(path, stage string) string {
	if stage == "" || stage == defaultStage {
		return path
	}
	rest, ok := strings.CutPrefix(path, "/")
	if ok {
		rest, ok = strings.CutPrefix(rest, stage)
	}
	switch {
	case !ok:
		return path
	case rest == "":
		return "/"
	case rest[0] == '/':
		return rest
	}
	return path
}

package authorizer

import "strings"

// defaultStage is the HTTP API stage served at the root of the API, with no path prefix.
const defaultStage = "$default"

// stripStage removes the "/<stage>" prefix that HTTP APIs put in front of the path of
// every stage but $default on the API's execute-api endpoint, so that route patterns
// match the same paths on every stage. It leaves a path that is the one arn, the
// event's route or method ARN, names as it is: a request through a custom domain has no
// stage in its path, and a first segment named like the stage is then the backend's
// (stage v1, a route /v1/chat). Where the two spell the path differently (one
// percent-decoded), the prefix is removed as before.
func stripStage(path, stage, arn string) string {
	if stage == "" || stage == defaultStage || path == arnPath(arn) {
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

// arnPath returns the request path that arn, an execute-api ARN
// (arn:aws:execute-api:<region>:<account>:<api>/<stage>/<method>/<path>), names, with
// its leading '/': the path within the API, without the stage or a custom domain's base
// path; "" for an ARN without a stage and method.
func arnPath(arn string) string {
	parts := strings.SplitN(arn, "/", 4)
	switch len(parts) {
	case 3:
		return "/"
	case 4:
		return "/" + parts[3]
	}
	return ""
}

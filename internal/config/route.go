package config

import (
	"fmt"
	"net/http"
	"strings"
)

// route is a compiled RouteSpec.
type route struct {
	method   string   // upper case; "" matches any
	segments []string // the pattern split at '/', "*" for any one segment
	rest     bool     // the pattern ended in "**" or "{name+}": any rest matches
	cost     int64
}

func compileRoute(spec RouteSpec) (route, error) {
	r := route{method: strings.ToUpper(spec.Method), cost: defaultCost}
	if r.method == "*" || r.method == "ANY" {
		r.method = ""
	}
	if r.method != "" && !validMethod(r.method) {
		return r, fmt.Errorf("method %q: want an HTTP method, * or ANY", spec.Method)
	}
	if !strings.HasPrefix(spec.Path, "/") {
		return r, fmt.Errorf("path %q: want a pattern starting with /", spec.Path)
	}
	segs := strings.Split(strings.TrimPrefix(spec.Path, "/"), "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch {
		case s == "**" || isParam(s) && strings.HasSuffix(s, "+}"):
			if !last {
				return r, fmt.Errorf("path %q: %s must be the last segment", spec.Path, s)
			}
			r.rest = true
			continue
		case isParam(s):
			s = "*"
		case strings.ContainsAny(s, "{}*"):
			return r, fmt.Errorf("path %q: segment %q: want a literal, *, {name}, ** or {name+}", spec.Path, s)
		}
		r.segments = append(r.segments, s)
	}
	if spec.Cost != nil {
		r.cost = int64(*spec.Cost)
	}
	if r.cost < 1 {
		return r, fmt.Errorf("cost %d would make the route a peek that enforces nothing: want 1 or more", r.cost)
	}
	return r, nil
}

func isParam(s string) bool { return len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' }

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// matches reports whether a request to method and path falls under r.
func (r route) matches(method, path string) bool {
	if r.method != "" && !strings.EqualFold(r.method, method) {
		return false
	}
	path = strings.TrimPrefix(path, "/")
	for _, want := range r.segments {
		if path == "" && !(want == "" && !r.rest) {
			return false
		}
		seg, tail, _ := strings.Cut(path, "/")
		if want != "*" && want != seg {
			return false
		}
		path = tail
	}
	return r.rest || path == ""
}

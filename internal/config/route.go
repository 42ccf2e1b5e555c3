package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
)

// RouteIDLen is the length of a route's id (Limits.Route): lowercase hex digits.
const RouteIDLen = 16

// route is a compiled RouteSpec.
type route struct {
	id       string   // routeID's
	method   string   // upper case; "" matches any
	segments []string // the pattern's segments, "*" for any one segment
	rest     bool     // the pattern ended in "**" or "{name+}": any rest matches
	cost     int64
	reserve  int64         // the estimate a request reserves; 0 takes cost instead
	ttl      time.Duration // how long its reservation or lease holds; 0 is bucketgate.DefaultTTL
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
		case s == "" && (last || i == 0 && len(segs) == 1): // "/" alone, or a trailing "/"
			continue
		case s == "" || s == "." || s == ".." || strings.ContainsAny(s, "%; \t\r\n\\?#"):
			return r, fmt.Errorf("path %q: segment %q: a pattern is written as requests are matched: no empty, dot or percent-encoded segments, no ';', '\\', '?', '#', spaces or line breaks", spec.Path, s)
		case s == "**" || isParam(s) && strings.HasSuffix(s, "+}"):
			if !last {
				return r, fmt.Errorf("path %q: %s must be the last segment", spec.Path, s)
			}
			r.rest = true
			continue
		case isParam(s):
			s = "*"
		case s == "*":
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
	r.id = routeID(r)
	return r, nil
}

// routeID returns r's id: the first RouteIDLen hex digits of the SHA-256 of its method
// and path pattern as it matches ("POST /v1/chat", "* /v1/*/**": any method, a
// parameter, literals in lower case since they match in any case). A reservation's id
// names its route by it, so that a settle finds the route again whatever routes were
// added, removed or moved around it; two spellings of one pattern ("/v1/{id}",
// "/V1/*") are one route.
func routeID(r route) string {
	var b strings.Builder
	b.WriteString(cmp.Or(r.method, "*"))
	b.WriteByte(' ')
	for _, s := range r.segments {
		b.WriteByte('/')
		b.WriteString(strings.ToLower(s))
	}
	if r.rest {
		b.WriteString("/**")
	}
	if len(r.segments) == 0 && !r.rest {
		b.WriteByte('/')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:RouteIDLen/2])
}

// compileReserve sets r's reserve from spec, the route at field: an estimate instead of
// a cost.
func compileReserve(field string, spec RouteSpec, r *route) error {
	switch {
	case spec.Reserve == nil:
		return nil
	case spec.Cost != nil:
		return errorAt(field+".reserve", "not with cost: a route reserves an estimate (settled at the actual cost) or takes a cost, not both")
	case *spec.Reserve < 1:
		return errorAt(field+".reserve", "%d: want an estimate of 1 token or more", *spec.Reserve)
	}
	r.reserve = int64(*spec.Reserve)
	return nil
}

// compileTTL sets r's ttl from spec, the route at field, whose requests take a lease
// when leases (a concurrency rule of the route's or of a plan's applies to them): how
// long what a request of the route holds lasts, a reservation or a lease. It returns
// idle, an error naming the field, for a ttlMs on a route whose requests can hold
// neither by the document: an identity's own rules in a registry table may add a
// concurrency rule, which the document cannot know, so whether that changes nothing is
// for the caller to tell (Config.CheckAlone).
func compileTTL(field string, spec RouteSpec, r *route, leases bool) (idle, err error) {
	if spec.TTLMs == nil {
		return nil, nil
	}
	most := bucketgate.MaxTTL.Milliseconds()
	if ms := int64(*spec.TTLMs); ms < 1 || ms > most {
		return nil, errorAt(field+".ttlMs", "%d: want whole milliseconds from 1 to %d", ms, most)
	}
	r.ttl = time.Duration(*spec.TTLMs) * time.Millisecond
	if r.reserve == 0 && !leases {
		idle = errorAt(field+".ttlMs", "only with reserve or a concurrency rule (the route's, a plan's, or with a registry table an identity's own): how long the route's reservation or lease holds, and this route's requests hold neither")
	}
	return idle, nil
}

// covers reports whether r matches every request that q matches, so that q, listed
// after r, never matches: r's method is q's or any (or GET for a HEAD q), and r's
// pattern matches every path of q's.
func (r route) covers(q route) bool {
	switch {
	case r.method != "" && r.method != q.method && !(r.method == http.MethodGet && q.method == http.MethodHead):
		return false
	case len(q.segments) < len(r.segments), !r.rest && (q.rest || len(q.segments) != len(r.segments)):
		return false
	}
	for i, want := range r.segments {
		if want != "*" && (q.segments[i] == "*" || !strings.EqualFold(q.segments[i], want)) {
			return false
		}
	}
	return true
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

// matches reports whether a request to method, whose path has the segments segs (see
// pathSegments), falls under r. Methods and literal segments match in any case, and a
// GET route matches HEAD too: backends answer HEAD with their GET handler, doing all of
// its work.
func (r route) matches(method string, segs []string) bool {
	if r.method != "" && !strings.EqualFold(r.method, method) &&
		!(r.method == http.MethodGet && strings.EqualFold(method, http.MethodHead)) {
		return false
	}
	if len(segs) < len(r.segments) || !r.rest && len(segs) != len(r.segments) {
		return false
	}
	for i, want := range r.segments {
		if want != "*" && !strings.EqualFold(segs[i], want) {
			return false
		}
	}
	return true
}

// pathSegments appends to segs the segments of a request path as routes match them,
// the way API Gateway and common backends resolve a path to a resource, so that no
// spelling of a path escapes its route. HTTP APIs hand over the path percent-decoded,
// and the web adapters that serve it from Lambda read it as a URL (the WHATWG URL
// parser of Node's fetch-based frameworks): so tabs and line breaks are removed
// wherever they are, the path ends at a '?' or '#' (a query or fragment), spaces at its
// end go, and '\' separates segments as '/' does. Then a segment's ";parameters" are
// dropped (servlet containers ignore them), percent-encoded unreserved characters (RFC
// 3986: letters, digits, '-', '.', '_', '~'), spaces and tabs are decoded, spaces and
// tabs around a segment are trimmed, "." segments, empty segments (repeated or trailing
// slashes) and ".." segments with the one before them are removed. A segment that only
// the dropping or trimming emptied ("%20", ";x") stays, as "", but under a reading that
// drops ;parameters (paramDots) one of ;parameters alone goes, as a servlet container
// removes the empty segment it leaves. One that only the
// trimming made "." or ".." ("..%20") stays as that, a segment to every backend. Whether
// a "." or ".." segment is a dot segment depends on how, the reading of backends: Flask
// keeps every one, Go and Node a "%2e%2e", Go, Node and Python a "..;x"; so does whether
// an encoded slash ('%2F') is a separator or a byte inside its segment. It reports in
// disguised what in a reading changed the path's segments or may have, and Limits tries
// every reading of those; and formatSuffix when the path's last segment has an
// extension, which Limits matches without it too (Config.formatless).
// Other percent-encodings stay as they are, inside their segment. It keeps the first
// most segments alone: the segments after them, which no route's pattern
// reaches, change only a count, which it keeps, removing one of them first for a ".."
// segment; so a path of any length costs a walk through it, and segs a match of the
// routes' patterns as the whole path's would. It allocates only for a path with a tab
// or line break, a segment that has something to decode, a reading of encodedSlashes,
// or more segments kept than segs holds.
func pathSegments(path string, segs []string, how reading, most int) (_ []string, disguised reading) {
	beyond := 0 // the segments after the first most
	push := func(seg string) {
		if len(segs) < most {
			segs = append(segs, seg)
		} else {
			beyond++
		}
	}
	if strings.ContainsAny(path, "\t\n\r") {
		path = strings.Map(dropBreak, path)
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	if how&encodedSlashes != 0 {
		path = decodeSlashes.Replace(path)
	} else if strings.Contains(path, "%2F") || strings.Contains(path, "%2f") {
		disguised = encodedSlashes | encodedDots | paramDots | keptDots // a segment it splits may hide a dot
	}
	path = strings.TrimRight(path, " ")
	for path != "" {
		seg := path
		if i := strings.IndexAny(path, `/\`); i >= 0 {
			seg, path = path[:i], path[i+1:]
		} else {
			path = ""
		}
		if seg == "" {
			continue // a repeated or trailing slash
		}
		var need reading // what a reading does for seg, if "." or "..", to be a dot segment
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg, need = seg[:i], paramDots
			if seg == "" { // ;parameters alone: a servlet container drops them, then the empty segment
				disguised |= paramDots
				if how&paramDots != 0 {
					continue
				}
			}
		}
		if strings.IndexByte(seg, '%') >= 0 {
			if decoded := decodeUnreserved(seg); decoded != seg {
				seg, need = decoded, need|encodedDots
			}
		}
		if seg != "." && seg != ".." {
			push(strings.Trim(seg, " \t"))
			continue
		}
		disguised |= need | keptDots
		if how&need != need || how&keptDots != 0 { // a segment to this reading
			push(seg)
			continue
		}
		switch {
		case seg != "..":
		case beyond > 0:
			beyond--
		case len(segs) > 0:
			segs = segs[:len(segs)-1]
		}
	}
	if n := len(segs); beyond == 0 && n > 0 && extension(segs[n-1]) > 0 {
		disguised |= formatSuffix // the path's last segment: see Config.formatless
	}
	return segs, disguised
}

// extension returns where seg's extension starts, at its first '.' after its first
// character; 0 when it has none (".." has none).
func extension(seg string) int {
	if seg == ".." {
		return 0
	}
	return max(strings.IndexByte(seg, '.'), 0)
}

// reading is how a backend resolves what percent-encoding or ;parameters disguise (a
// "." or ".." segment, a slash): a set of what it does before it splits a path into
// segments and removes the dot segments.
type reading uint8

const (
	// encodedDots: it decodes "%2e" first, so "%2e%2e" is "..": Node's URL parser,
	// gorilla/mux, servlet containers. Go's ServeMux and chi serve it as a segment.
	encodedDots reading = 1 << iota
	// paramDots: it drops ;parameters first, so "..;x" is "..", and ";x" an empty
	// segment, removed: servlet containers. Go, Node and Python serve each as a segment.
	paramDots
	// encodedSlashes: it decodes "%2F" first, so "a%2Fb" is two segments: gorilla/mux
	// by default, and WSGI servers (Flask, Django), which route on the decoded path.
	// Go's ServeMux, chi and Node keep it inside its segment.
	encodedSlashes
	// keptDots: it removes no dot segment, plain ones included: Flask (Werkzeug), on
	// WSGI servers, serves "/a/../admin" by "/a/{id}/admin" with the id "..". Go's
	// ServeMux redirects to the path without them, Node and servlet containers remove
	// them.
	keptDots
	// formatSuffix: it reads the last segment's extension, from its first '.' after its
	// first character, as the response's format: Rails serves "/v1/chat.json" by the
	// route "/v1/chat" (every route ends in an optional "(.:format)"), and Spring's
	// suffix pattern matching "/v1/chat.anything". Go, Node, Python and the rest serve it
	// as the segment it is. No walk of its own: the segments of every reading walked
	// are matched as they are and, when the path's last has an extension, without it.
	// A Rails format holds no '.', so it starts at the segment's last '.' ("/report.v2.json"
	// is the route "/report.v2"); Spring's suffix starts at any, the first at the
	// earliest ("/v1/chat.a.b" is "/v1/chat"): both are tried.
	formatSuffix
)

// readings are every reading a backend may take, each combination of what one may
// do (with keptDots, whether it decodes "%2e" or drops ;parameters changes nothing);
// the first is the one routes match a path by when nothing in it is read two ways.
var readings = [...]reading{encodedDots, 0, paramDots, encodedDots | paramDots,
	encodedSlashes | encodedDots, encodedSlashes, encodedSlashes | paramDots, encodedSlashes | encodedDots | paramDots,
	keptDots | encodedDots, keptDots | encodedSlashes | encodedDots}

// decodeSlashes decodes the encoded slashes of a path, for the encodedSlashes readings.
var decodeSlashes = strings.NewReplacer("%2F", "/", "%2f", "/")

// dropBreak is strings.Map's mapping that removes tabs and line breaks, as a URL
// parser does.
func dropBreak(r rune) rune {
	if r == '\t' || r == '\n' || r == '\r' {
		return -1
	}
	return r
}

// decodeUnreserved decodes the percent-encoded unreserved characters, spaces and tabs
// of a path segment, and leaves every other byte as it is: s itself, unallocated, when
// it has none.
func decodeUnreserved(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, ok := unhex(s[i+1], s[i+2]); ok && (unreserved(c) || c == ' ' || c == '\t') {
				if b.Len() == 0 {
					b.Grow(len(s))
					b.WriteString(s[:i])
				}
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		if b.Len() > 0 {
			b.WriteByte(s[i])
		}
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// unreserved reports whether c is an unreserved character of RFC 3986, section 2.3.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(hi, lo byte) (byte, bool) {
	h, ok1 := hexDigit(hi)
	l, ok2 := hexDigit(lo)
	return h<<4 | l, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

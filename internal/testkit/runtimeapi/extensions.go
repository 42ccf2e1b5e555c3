package runtimeapi

import (
	"net/http"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// extensionPrefix starts every Extensions API (version 2020-01-01) path.
const extensionPrefix = "/2020-01-01/extension/"

// The Extensions API's headers: the name an extension registers with, and the
// identifier it is given for its later calls.
const (
	headerExtensionName = "Lambda-Extension-Name"
	headerExtensionID   = "Lambda-Extension-Identifier"
)

// serveExtension answers the Extensions API: register gives an extension its
// identifier; event/next, for a registered identifier, blocks until the server closes,
// as it does in Lambda for an extension that registered for no event (an internal
// extension, such as the one lambda.WithEnableSIGTERM registers).
func (s *Server) serveExtension(w http.ResponseWriter, r *http.Request, path string) {
	switch {
	case r.Method == http.MethodPost && path == "register":
		name := r.Header.Get(headerExtensionName)
		if name == "" {
			http.Error(w, "register: no "+headerExtensionName+" header", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.extensions = append(s.extensions, name)
		id := "ext-" + strconv.Itoa(len(s.extensions))
		s.extensionIDs[id] = true
		s.mu.Unlock()
		w.Header().Set(headerExtensionID, id)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"functionName":"local","functionVersion":"$LATEST","handler":"bootstrap"}`))
	case r.Method == http.MethodGet && path == "event/next":
		id := r.Header.Get(headerExtensionID)
		s.mu.Lock()
		known := s.extensionIDs[id]
		s.mu.Unlock()
		if !known {
			http.Error(w, "event/next: unknown extension identifier "+strconv.Quote(id), http.StatusForbidden)
			return
		}
		<-r.Context().Done()
	default:
		http.NotFound(w, r)
	}
}

// Extensions returns the names of the extensions that registered, in order.
func (s *Server) Extensions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.extensions)
}

// Shutdown ends the function process p as Lambda ends an instance, and returns the
// signal it sent: SIGTERM when an extension has registered, SIGKILL at once when none
// has. (After SIGTERM, Lambda gives the runtime a shutdown phase, 500 ms with an
// internal extension alone, then sends SIGKILL.) It does not wait: the caller, which
// started p, waits for it and kills it if it does not end.
func (s *Server) Shutdown(p *os.Process) (os.Signal, error) {
	sig := os.Signal(syscall.SIGKILL)
	if len(s.Extensions()) > 0 {
		sig = syscall.SIGTERM
	}
	return sig, p.Signal(sig)
}

package runtimeapi

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// extensionCall makes one Extensions API call: a register under name (none when "") or,
// with method GET, an event/next with identifier id; ctx bounds it.
func extensionCall(ctx context.Context, s *Server, method, path, name, id string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.Addr+extensionPrefix+path, nil)
	if err != nil {
		return nil, err
	}
	if name != "" {
		req.Header.Set(headerExtensionName, name)
	}
	if id != "" {
		req.Header.Set(headerExtensionID, id)
	}
	return http.DefaultClient.Do(req)
}

// An extension registers and is given an identifier; its event/next blocks (it
// registered for no event); calls without a name or with an unknown identifier are
// refused.
func TestExtensionRegister(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	resp, err := extensionCall(ctx, s, http.MethodPost, "register", "GoLangEnableSIGTERM", "")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get(headerExtensionID)
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("register: status %d, identifier %q; want 200 and an identifier", resp.StatusCode, id)
	}
	if got := s.Extensions(); !slices.Equal(got, []string{"GoLangEnableSIGTERM"}) {
		t.Errorf("Extensions() = %q", got)
	}

	waiting, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if resp, err := extensionCall(waiting, s, http.MethodGet, "event/next", "", id); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("event/next answered (%v, %v); want it to block", resp, err)
	}

	tests := []struct {
		name, method, path, extName, id string
		want                            int
	}{
		{"register without a name", http.MethodPost, "register", "", "", http.StatusBadRequest},
		{"event/next of an unknown identifier", http.MethodGet, "event/next", "", "ext-99", http.StatusForbidden},
		{"event/next without an identifier", http.MethodGet, "event/next", "", "", http.StatusForbidden},
		{"unknown path", http.MethodPost, "exit/error", "", id, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := extensionCall(ctx, s, tc.method, tc.path, tc.extName, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// Shutdown sends SIGTERM when an extension has registered, SIGKILL when none has, as
// Lambda does.
func TestShutdown(t *testing.T) {
	tests := []struct {
		name     string
		register bool
		want     syscall.Signal
	}{
		{"no extension", false, syscall.SIGKILL},
		{"an extension registered", true, syscall.SIGTERM},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newServer(t)
			if tc.register {
				resp, err := extensionCall(context.Background(), s, http.MethodPost, "register", "test", "")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			cmd := exec.Command("sleep", "60")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sig, err := s.Shutdown(cmd.Process)
			if err != nil || sig != tc.want {
				_ = cmd.Process.Kill()
				t.Errorf("Shutdown = %v, %v; want %v", sig, err, tc.want)
			}
			_ = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != tc.want {
				t.Errorf("process ended %v, want by %v", cmd.ProcessState, tc.want)
			}
		})
	}
}

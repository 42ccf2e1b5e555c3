package runtimeapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// function plays the function's side of the Runtime API with plain HTTP calls.
type function struct {
	t    *testing.T
	base string
}

func newServer(t *testing.T) (*Server, function) {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, function{t: t, base: "http://" + s.Addr + apiPrefix}
}

// async runs fn as the function process would, concurrently, and makes t wait for it
// before the server closes.
func (f function) async(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	f.t.Cleanup(func() { <-done })
}

// next polls for an invocation and returns its id, headers and payload.
func (f function) next() (string, http.Header, string) {
	f.t.Helper()
	resp, err := http.Get(f.base + "invocation/next")
	if err != nil {
		f.t.Error(err)
		return "", nil, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header.Get("Lambda-Runtime-Aws-Request-Id"), resp.Header, string(b)
}

// post posts body to path and returns the status.
func (f function) post(path, body string) int {
	f.t.Helper()
	resp, err := http.Post(f.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		f.t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestInvokeResponse(t *testing.T) {
	s, f := newServer(t)
	statuses := make(chan int, 2)
	f.async(func() {
		id, h, payload := f.next()
		deadline, err := strconv.ParseInt(h.Get("Lambda-Runtime-Deadline-Ms"), 10, 64)
		if err != nil || time.UnixMilli(deadline).Before(time.Now()) || h.Get("Lambda-Runtime-Invoked-Function-Arn") != s.FunctionARN {
			t.Errorf("headers %v: want a future deadline and the function ARN", h)
		}
		statuses <- f.post("invocation/"+id+"/response", `{"echo":`+payload+`}`)
		statuses <- f.post("invocation/"+id+"/response", `{}`) // a second answer
	})
	out, err := s.Invoke(context.Background(), []byte(`{"n":1}`))
	if err != nil || string(out) != `{"echo":{"n":1}}` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
	if first, second := <-statuses, <-statuses; first != http.StatusAccepted || second != http.StatusBadRequest {
		t.Errorf("statuses %d, %d: want 202, then 400 for answering twice", first, second)
	}
}

func TestInvokeFunctionError(t *testing.T) {
	s, f := newServer(t)
	f.async(func() {
		id, _, _ := f.next()
		f.post("invocation/"+id+"/error", `{"errorMessage":"Unauthorized","errorType":"errorString"}`)
	})
	_, err := s.Invoke(context.Background(), []byte(`{}`))
	var fe *FunctionError
	if !errors.As(err, &fe) || fe.Message != "Unauthorized" || fe.Type != "errorString" || err.Error() != "Unauthorized" {
		t.Fatalf("error %#v, want the posted function error", err)
	}
}

func TestInitError(t *testing.T) {
	s, f := newServer(t)
	for range 2 { // a second report must not block the server
		if got := f.post("init/error", `{"errorMessage":"no Redis address","errorType":"Runtime.InitError"}`); got != http.StatusAccepted {
			t.Fatalf("status %d", got)
		}
	}
	select {
	case fe := <-s.InitError():
		if fe.Message != "no Redis address" || fe.Type != "Runtime.InitError" {
			t.Fatalf("init error %+v", fe)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no init error delivered")
	}
}

func TestRefusedCalls(t *testing.T) {
	_, f := newServer(t)
	tests := []struct {
		name, path, body string
		want             int
	}{
		{"unknown invocation", "invocation/req-99/response", `{}`, http.StatusBadRequest},
		{"unknown answer kind", "invocation/req-1/verdict", `{}`, http.StatusNotFound},
		{"unknown path", "extension/register", `{}`, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := f.post(tc.path, tc.body); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}
}

func TestInvokeWithoutFunction(t *testing.T) {
	s, _ := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Invoke(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "no function polled") {
		t.Fatalf("error %v, want context.Canceled saying no function polled", err)
	}
}

// Polled tells when the function first asked for an invocation, and the invocation
// still goes through.
func TestPolled(t *testing.T) {
	s, f := newServer(t)
	before := time.Now()
	f.async(func() {
		id, _, _ := f.next()
		f.post("invocation/"+id+"/response", `{}`)
	})
	select {
	case at := <-s.Polled():
		if at.Before(before) {
			t.Errorf("polled at %v, before the function started at %v", at, before)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no poll reported")
	}
	if _, err := s.Invoke(context.Background(), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
}

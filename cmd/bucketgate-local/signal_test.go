package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second Ctrl-C while serve waits for a stream to end stops the program at once, by
// the signal, where it used to be ignored until the grace ran out and the program
// exited 0.
func TestSecondCtrlCStopsAtOnce(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // streams until the gateway hangs up
	}))
	t.Cleanup(backend.Close)
	cmd := exec.Command(build(t, "bucketgate-local"), "serve", "-addr", "127.0.0.1:0", "-template", templatePath, "-backend", backend.URL)
	cmd.Env = []string{"REDIS_ADDR=" + miniAt(t).Addr(), "REDIS_TIMEOUT_MS=" + testTimeout}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url, stopping := make(chan string, 1), make(chan struct{})
	go lines(stdout, func(line string) {
		if u, ok := strings.CutPrefix(line, "bucketgate local API Gateway on "); ok {
			url <- u
		}
	})
	go func() {
		lines(stderr, func(line string) {
			if strings.Contains(line, "Ctrl-C again stops at once") {
				close(stopping)
			}
		})
		exited <- cmd.Wait() // once both pipes are read to their end
	}()
	var base string
	select {
	case base = <-url:
	case <-time.After(30 * time.Second):
		t.Fatal("no banner in 30 s")
	}
	resp, err := http.Get(base + "/v1/chat")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if first, err := bufio.NewReader(resp.Body).ReadString('\n'); first != "data: first\n" {
		t.Fatalf("first line %q: %v", first, err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopping:
	case err := <-exited:
		t.Fatalf("the first Ctrl-C ended serve before it said it was stopping: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not say it was stopping in 30 s")
	}
	// The handler is given back to the system just after the message: retry until it is,
	// for as long as the waits above.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
				t.Fatalf("after a second Ctrl-C serve ended with %v, want the signal interrupt", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("serve had not ended 30 s after a second Ctrl-C, sent every 100 ms")
			}
		}
	}
}

// lines calls each with every line r gives until its end.
func lines(r io.Reader, each func(string)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		each(sc.Text())
	}
}

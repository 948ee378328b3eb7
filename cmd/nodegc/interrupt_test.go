package main

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// promptWatcher is a stderr that cancels a context once the confirmation
// prompt has been written: the operator presses Ctrl-C at the prompt.
type promptWatcher struct {
	mu     sync.Mutex
	b      strings.Builder
	cancel context.CancelFunc
}

func (w *promptWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), "Remove these ") {
		w.cancel()
	}
	return len(p), nil
}

func (w *promptWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestGCSignalAtThePrompt pins issue 8 item 10 for the confirmation: a
// signal while gc waits for y/N ends gc at once (exit 1, nothing removed).
// Before, the blocked read swallowed Ctrl-C and SIGTERM until the operator
// also pressed Enter.
func TestGCSignalAtThePrompt(t *testing.T) {
	node, ep := startSimnode(t, testNode())
	stdin, typing := io.Pipe() // nobody answers
	defer typing.Close()
	c := newCLI("")
	c.tty = true
	c.f.In = stdin
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &promptWatcher{cancel: cancel}
	c.f.Err = w
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, c.f, []string{"gc", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--minimum-image-ttl-duration", "0s"})
	}()
	// A bound on a hang, not on speed: gc must end without an answer.
	hang, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	select {
	case code := <-done:
		if code != exitFailure {
			t.Errorf("exit %d, want %d", code, exitFailure)
		}
	case <-hang.Done():
		typing.Close() // let the old code's read end
		<-done
		t.Fatalf("gc still waited for an answer after the signal: %q", w.String())
	}
	if !strings.Contains(w.String(), "interrupted at the confirmation; nothing was removed") {
		t.Errorf("stderr %q, want it to say nothing was removed", w.String())
	}
	if m := mutating(node); len(m) != 0 {
		t.Errorf("mutating calls %v after a signal at the prompt", m)
	}
}

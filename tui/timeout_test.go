package tui

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctest"
)

// Issue 11 item 4: the refresh timeout bounds a refresh even when the
// snapshot call ignores its context (a lock, a hung runtime): the refresh
// reports the timeout instead of hanging, the display keeps its last
// data, and no second call piles up behind the hung one.
func TestRefreshTimeoutIsReportedNotHung(t *testing.T) {
	now := fixedNow
	o := fixtureOptions(newFakeController(fixtureSnapshot(), engine.DefaultPolicy()), &now)
	good := o.Snapshot
	release := make(chan struct{})
	var calls atomic.Int32
	var hang atomic.Bool
	hung := make(chan struct{}) // closed once the hung call is in
	o.Snapshot = func(ctx context.Context) (engine.Snapshot, error) {
		calls.Add(1)
		if hang.Load() {
			close(hung)
			<-release // ignores ctx
		}
		return good(ctx)
	}
	m := send(New(o), windowSize(100, 30))
	m = refreshNow(t, m) // at the default timeout: 1 ms is too short for any real work under -race
	if !m.haveSnap {
		t.Fatal("the first refresh showed nothing")
	}
	m.o.refreshTimeout = time.Millisecond
	hang.Store(true)
	defer func() {
		close(release)
		m.o.snapshotSlot <- struct{}{} // the hung call has returned
	}()

	cmd := m.startRefresh(true)
	msg, _ := proctest.Returns(t, "the refresh behind a snapshot that ignores its context", func() (RefreshMsg, error) {
		return cmd().(RefreshMsg), nil
	})
	if !errors.Is(msg.Err, context.DeadlineExceeded) {
		t.Fatalf("refresh error %v; want the deadline", msg.Err)
	}
	m, _ = update(m, msg)
	if m.refreshing {
		t.Error("the timed-out refresh is still marked running: no later refresh can start")
	}
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "snapshot: timed out after 1ms") {
		t.Errorf("the status line does not report the timeout:\n%s", s)
	}
	if !m.haveSnap || m.snap.Images == nil {
		t.Error("the display lost its last snapshot")
	}

	// The hung call has not returned: the next refresh fails at once
	// rather than calling the runtime again. (The timeout can come before
	// the hung call has even begun: count from when it is in.)
	proctest.Done(t, "the hung snapshot call to begin", func() { <-hung })
	m, _ = update(m, m.startRefresh(true)())
	if calls.Load() != 2 || !strings.Contains(m.lastErr, errSnapshotBusy.Error()) {
		t.Errorf("%d snapshot calls, error %q; want 2 calls and %q", calls.Load(), m.lastErr, errSnapshotBusy)
	}
}

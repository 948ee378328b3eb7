package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// slowLister is a Reader whose container listing takes a set time on a
// clock the test drives.
type slowLister struct {
	fakeRuntime
	clock *stepClock
	took  time.Duration
	lists atomic.Int32
}

func (s *slowLister) ListContainers(ctx context.Context) ([]model.Container, error) {
	s.lists.Add(1)
	s.clock.advance(s.took)
	return nil, nil
}

// stepClock is a clock that moves only when told to.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestNodeViewWindow(t *testing.T) {
	cases := []struct {
		name string
		took time.Duration // how long one listing takes
		age  time.Duration // the view's age at the second re-check
		same bool          // the view is still usable
	}{
		{"a quick listing is trusted for ViewWindow", time.Millisecond, ViewWindow - time.Millisecond, true},
		{"a quick listing older than ViewWindow is listed again", time.Millisecond, ViewWindow + time.Millisecond, false},
		{"a slow listing is trusted for twice its duration", 300 * time.Millisecond, 599 * time.Millisecond, true},
		{"a slow listing older than twice its duration is listed again", 300 * time.Millisecond, 601 * time.Millisecond, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gen atomic.Uint64
			v := newNodeView(context.Background(), newFakeRuntime(), &gen, viewAll)
			v.took = tc.took
			d := &viewData{at: execNow}
			if got := v.usable(d, execNow.Add(tc.age), 0); got != tc.same {
				t.Errorf("a view %v old after a listing of %v is usable: %v, want %v", tc.age, tc.took, got, tc.same)
			}
		})
	}
	t.Run("a view about to expire starts the next listing in the background", func(t *testing.T) {
		clk := &stepClock{t: execNow}
		r := &slowLister{fakeRuntime: *newFakeRuntime(), clock: clk, took: 10 * time.Millisecond}
		var gen atomic.Uint64
		v := newNodeView(context.Background(), r, &gen, viewAll)
		v.clock = clk.now
		first, _ := v.fresh(false) // listed: 10 ms
		v.wait()
		clk.advance(80 * time.Millisecond) // 90 ms old: 90+10 >= 100
		if second, _ := v.fresh(false); second != first {
			t.Errorf("a usable view was not returned at once")
		}
		v.wait()
		if n := r.lists.Load(); n != 2 {
			t.Errorf("%d listings, want the first and one in the background", n)
		}
	})
	t.Run("a container event makes the next re-check list again", func(t *testing.T) {
		clk := &stepClock{t: execNow}
		r := &slowLister{fakeRuntime: *newFakeRuntime(), clock: clk, took: time.Millisecond}
		var gen atomic.Uint64
		v := newNodeView(context.Background(), r, &gen, viewAll)
		v.clock = clk.now
		first, _ := v.fresh(false)
		gen.Add(1)
		second, _ := v.fresh(false)
		if second == first || second.gen != 1 {
			t.Errorf("the re-check after an event used a listing from before it")
		}
		v.wait()
	})
}

// eventfulLister reports a container event during every listing, and can
// fail its listings.
type eventfulLister struct {
	fakeRuntime
	gen   *atomic.Uint64
	fail  atomic.Bool
	lists atomic.Int32
}

func (l *eventfulLister) ListContainers(ctx context.Context) ([]model.Container, error) {
	l.lists.Add(1)
	l.gen.Add(1)
	if l.fail.Load() {
		return nil, fmt.Errorf("transient")
	}
	return nil, nil
}

func TestNodeViewUnderEventsAndErrors(t *testing.T) {
	t.Run("events during every listing do not starve a re-check", func(t *testing.T) {
		var gen atomic.Uint64
		l := &eventfulLister{fakeRuntime: *newFakeRuntime(), gen: &gen}
		v := newNodeView(context.Background(), l, &gen, viewAll)
		if _, err := v.fresh(false); err != nil {
			t.Fatal(err)
		}
		v.wait()
		if n := l.lists.Load(); n > 2 {
			t.Errorf("%d listings for one re-check: an event during a listing made it list again", n)
		}
	})
	t.Run("an event before the check began is never missed", func(t *testing.T) {
		var gen atomic.Uint64
		l := &eventfulLister{fakeRuntime: *newFakeRuntime(), gen: &gen}
		v := newNodeView(context.Background(), l, &gen, viewAll)
		first, _ := v.fresh(false)
		v.wait()
		gen.Add(1) // a container created before the next check
		second, _ := v.fresh(false)
		v.wait()
		if second == first {
			t.Error("the check after an event used a listing from before it")
		}
	})
	t.Run("a failed listing of the phase before does not fail this phase's re-check", func(t *testing.T) {
		var gen atomic.Uint64
		l := &eventfulLister{fakeRuntime: *newFakeRuntime(), gen: &gen}
		l.fail.Store(true)
		v := newNodeView(context.Background(), l, &gen, viewAll)
		v.prefetch(false)
		v.wait() // it failed
		v.invalidate()
		l.fail.Store(false)
		if _, err := v.fresh(false); err != nil {
			t.Errorf("re-check after a new phase: %v", err)
		}
		v.wait()
	})
}

// hangingLister is a Reader whose first container listing hangs until its
// context ends; the later ones answer at once.
type hangingLister struct {
	fakeRuntime
	lists     atomic.Int32
	cancelled chan struct{}
}

func (h *hangingLister) ListContainers(ctx context.Context) ([]model.Container, error) {
	if h.lists.Add(1) == 1 {
		<-ctx.Done()
		close(h.cancelled)
		return nil, ctx.Err()
	}
	return nil, nil
}

func TestNodeViewCancelsAListingItWillNotUse(t *testing.T) {
	for _, end := range []struct {
		name string
		end  func(v *nodeView)
	}{
		{"at a phase boundary", (*nodeView).invalidate},
		{"at the end of the pass", (*nodeView).close},
	} {
		t.Run(end.name, func(t *testing.T) {
			var gen atomic.Uint64
			l := &hangingLister{fakeRuntime: *newFakeRuntime(), cancelled: make(chan struct{})}
			v := newNodeView(context.Background(), l, &gen, viewAll)
			v.prefetch(false)
			end.end(v)
			select {
			case <-l.cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("the listing of the view given up was not cancelled")
			}
			if _, err := v.fresh(false); err != nil {
				t.Errorf("the next re-check: %v; want a new listing, not the cancelled one's error", err)
			}
			v.close()
			if n := l.lists.Load(); n != 2 {
				t.Errorf("%d listings, want 2: the cancelled one and the next re-check's", n)
			}
		})
	}
}

// errThenHang is a Reader whose first container listing fails and whose
// second hangs until cancelled (and returns a little after).
type errThenHang struct {
	fakeRuntime
	lists atomic.Int32
}

func (h *errThenHang) ListContainers(ctx context.Context) ([]model.Container, error) {
	switch h.lists.Add(1) {
	case 1:
		return nil, errors.New("phase-1 listing failed")
	case 2:
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond)
		return nil, ctx.Err()
	}
	return nil, nil
}

func TestNodeViewPhaseErrorDoesNotCrossABoundary(t *testing.T) {
	var gen atomic.Uint64
	l := &errThenHang{fakeRuntime: *newFakeRuntime()}
	v := newNodeView(context.Background(), l, &gen, viewAll)
	if _, err := v.fresh(false); err == nil {
		t.Fatal("want the first listing's error")
	}
	v.prefetch(false) // a listing of phase 1 in flight at the boundary
	v.invalidate()
	if _, err := v.fresh(false); err != nil {
		t.Errorf("phase 2's first re-check failed with phase 1's error: %v", err)
	}
	v.close()
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowLister is a Reader whose container listing takes a set time on a
// clock the test drives.
type slowLister struct {
	fakeRuntime
	clock *stepClock
	took  time.Duration
	lists atomic.Int32
}

func (s *slowLister) ListContainers(ctx context.Context) ([]Container, error) {
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

func TestApplyContainerRecheck(t *testing.T) {
	cases := []struct {
		name       string
		state      ContainerState // at the runtime when applied
		planned    ContainerState
		podLogDir  bool // the pod has a log directory
		wantStatus bool // ContainerStatus is asked
		want       Outcome
	}{
		{"an exited container without a pod log dir is removed on the view's word", ContainerExited, ContainerExited, false, false, OutcomeRemoved},
		{"an exited container whose pod has a log dir is asked for its log path", ContainerExited, ContainerExited, true, true, OutcomeRemoved},
		{"a container the view shows running is confirmed and kept", ContainerRunning, ContainerExited, false, true, OutcomeSkipped},
		{"a container planned as created is asked, since it can still start", ContainerCreated, ContainerCreated, false, true, OutcomeRemoved},
		{"a container planned as created that runs now is kept", ContainerRunning, ContainerCreated, false, true, OutcomeSkipped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.Containers["c1"] = Container{ID: "c1", Name: "app", PodSandboxID: "s1", PodUID: "u1", State: tc.state}
			e := newPoolEngine(t, rt, 1)
			podLogs := filepath.Join(t.TempDir(), "pods")
			e.o.Policy.PodLogsDir = podLogs
			if tc.podLogDir {
				if err := os.MkdirAll(filepath.Join(podLogs, "ns_web_u1"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			p := Plan{Pass: PassContainers, EvaluatedAt: execNow, ContainerGC: ContainerPlan{Remove: []ContainerRemoval{
				{ID: "c1", PodUID: "u1", PodNamespace: "ns", PodName: "web", Name: "app", State: tc.planned, Reason: RemovePerContainerLimit}}}}
			r, err := e.Apply(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(r)["c1"]; got != tc.want {
				t.Errorf("outcome %s, want %s", got, tc.want)
			}
			rt.Mu.Lock()
			asked := slices.Contains(rt.Calls, "ContainerStatus c1")
			rt.Mu.Unlock()
			if asked != tc.wantStatus {
				t.Errorf("ContainerStatus asked: %v, want %v", asked, tc.wantStatus)
			}
		})
	}
}

func TestSnapshotDoesNotWaitForAPass(t *testing.T) {
	rt := newFakeRuntime()
	addImages(rt, "i1", "i2")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rt.Before = func(method, id string) {
		if method == "RemoveImage" {
			once.Do(func() { close(entered) })
			<-release
		}
	}
	e := newPoolEngine(t, rt, 1)
	done := make(chan PassReport)
	go func() {
		r, _ := e.Apply(context.Background(), reclaimPlan("i1", "i2"))
		done <- r
	}()
	<-entered // the pass is inside its first removal, and stays there
	got := make(chan error)
	go func() {
		_, err := e.Snapshot(context.Background())
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("snapshot during a pass: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the snapshot waited for the pass in flight")
	}
	close(release)
	r := <-done
	if n := r.Count(OutcomeRemoved); n != 2 {
		t.Errorf("the pass removed %d images, want 2", n)
	}
}

func TestContainersChanged(t *testing.T) {
	rt := newFakeRuntime()
	rt.Containers["c1"] = Container{ID: "c1", State: ContainerRunning}
	rt.Containers["c2"] = Container{ID: "c2", State: ContainerExited}
	e := newTestEngine(t, rt, true)
	ctx := context.Background()
	s, err := e.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	since := ContainersFingerprint(s.Containers)
	changed := func() bool {
		t.Helper()
		ch, err := e.ContainersChanged(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	if changed() {
		t.Error("nothing happened since the snapshot: changed")
	}
	for _, st := range []struct {
		name string
		do   func()
	}{
		{"a container dies", func() { rt.Containers["c1"] = Container{ID: "c1", State: ContainerExited} }},
		{"a container is created", func() { rt.Containers["c3"] = Container{ID: "c3", State: ContainerCreated} }},
		{"a container is removed", func() { delete(rt.Containers, "c2") }},
	} {
		rt.Mu.Lock()
		st.do()
		rt.Mu.Unlock()
		if !changed() {
			t.Errorf("%s: not changed", st.name)
		}
		// Another snapshot (a pass's, a preview's) does not hide it from
		// a caller that still shows the old one.
		if _, err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		if !changed() {
			t.Errorf("%s, then someone else's snapshot: not changed", st.name)
		}
		s, _ := e.Snapshot(ctx)
		since = ContainersFingerprint(s.Containers)
		if changed() {
			t.Errorf("%s, then a new snapshot: changed", st.name)
		}
	}
}

// eventfulLister reports a container event during every listing, and can
// fail its listings.
type eventfulLister struct {
	fakeRuntime
	gen   *atomic.Uint64
	fail  atomic.Bool
	lists atomic.Int32
}

func (l *eventfulLister) ListContainers(ctx context.Context) ([]Container, error) {
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

func (h *hangingLister) ListContainers(ctx context.Context) ([]Container, error) {
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

func (h *errThenHang) ListContainers(ctx context.Context) ([]Container, error) {
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

// streamSource is an EventSource whose streams the test feeds.
type streamSource struct {
	opens  chan chan ContainerEvent
	noneAt int // the open call (from 1) that says there is no stream
	calls  atomic.Int32
}

func (s *streamSource) ContainerEvents(ctx context.Context) (<-chan ContainerEvent, error) {
	if n := int(s.calls.Add(1)); n == s.noneAt {
		return nil, fmt.Errorf("container events: %w", ErrNoEventStream)
	}
	// As the contract asks, the stream ends with ctx; the test feeds in
	// and may break it through in.
	in, out := make(chan ContainerEvent, 4), make(chan ContainerEvent)
	s.opens <- in
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-in:
				if !ok {
					return
				}
				out <- ev
			}
		}
	}()
	return out, nil
}

func TestFollowEvents(t *testing.T) {
	e := newTestEngine(t, newFakeRuntime(), false)
	src := &streamSource{opens: make(chan chan ContainerEvent, 4), noneAt: 2}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.followEvents(context.Background(), src)
	}()
	ch := <-src.opens
	// The source hands over the stream just before ContainerEvents
	// returns it; the follower signals the open after that.
	opened := e.containerGen.Load()
	for deadline := time.Now().Add(10 * time.Second); opened == 0 && time.Now().Before(deadline); opened = e.containerGen.Load() {
		time.Sleep(time.Millisecond)
	}
	if opened == 0 {
		t.Fatal("opening the stream did not make the next re-check list again")
	}
	ch <- ContainerEvent{Type: ContainerStoppedEvent}
	ch <- ContainerEvent{Type: ContainerCreatedEvent}
	ch <- ContainerEvent{Type: ContainerStartedEvent}
	close(ch) // the stream breaks; the second open says there is none
	<-done
	if got := e.containerGen.Load() - opened; got != 2 {
		t.Errorf("%d re-list signals for one created and one started container (and one stopped), want 2", got)
	}
}

func TestFollowEventsStops(t *testing.T) {
	e := newTestEngine(t, newFakeRuntime(), false)
	src := &streamSource{opens: make(chan chan ContainerEvent, 4)}
	stop := e.FollowEvents(context.Background(), src)
	<-src.opens // following, its stream open and quiet
	stop()      // returns only once the follower has ended
	if n := src.calls.Load(); n != 1 {
		t.Errorf("the stream was opened %d times, want once", n)
	}
}

// slowListRuntime takes its time over every container listing.
type slowListRuntime struct {
	*fakeRuntime
	took time.Duration
}

func (s *slowListRuntime) ListContainers(ctx context.Context) ([]Container, error) {
	time.Sleep(s.took)
	return s.fakeRuntime.ListContainers(ctx)
}

func TestTheImageRecheckWindowDoesNotGrowWithASlowListing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state ContainerState
	}{
		{"a container created on an image after a slow listing keeps the image", ContainerCreated},
		{"a container started on an image after a slow listing keeps the image", ContainerRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime()
			addImages(rt, "i1", "i2")
			slow := &slowListRuntime{fakeRuntime: rt, took: 300 * time.Millisecond}
			e := newTestEngine(t, rt, false)
			e.o.Reader, e.o.Parallel = slow, 1
			rt.Before = func(method, id string) {
				if id == "i1" {
					// Well inside twice the listing's duration, past ViewWindow.
					rt.Mu.Lock()
					rt.Containers["c"] = Container{ID: "c", Name: "new", ImageID: "i2", State: tc.state}
					rt.Mu.Unlock()
					time.Sleep(ViewWindow + 50*time.Millisecond)
				}
			}
			r, err := e.Apply(context.Background(), reclaimPlan("i1", "i2"))
			if err != nil {
				t.Fatal(err)
			}
			if got := rt.MutatingCalls(); !slices.Equal(got, []string{"RemoveImage i1"}) || r.Items[1].Outcome != OutcomeSkipped {
				t.Errorf("calls %v, i2 %s: the image a new container uses must be kept", got, r.Items[1].Outcome)
			}
		})
	}
}

package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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

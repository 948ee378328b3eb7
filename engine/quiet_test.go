package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// quietNode is an engine over a fake runtime with a clock the test moves,
// the container event stream live, and optionally a pod source and log
// directories.
type quietNode struct {
	rt      *fakeRuntime
	e       *Engine
	now     time.Time
	podGen  atomic.Uint64
	podLogs string
	links   string
}

// quietOptions choose what the node has besides the runtime.
type quietOptions struct {
	pods, podGenless, logs bool
	minAge                 time.Duration
}

func newQuietNode(t *testing.T, o quietOptions) *quietNode {
	t.Helper()
	n := &quietNode{rt: newFakeRuntime(), now: execNow}
	// A running pod: nothing to remove.
	n.rt.Sandboxes["s1"] = Sandbox{ID: "s1", PodUID: "u1", State: SandboxReady, CreatedAt: execNow.Add(-time.Hour)}
	n.rt.Containers["c1"] = Container{ID: "c1", PodSandboxID: "s1", PodUID: "u1", Name: "app", State: ContainerRunning, CreatedAt: execNow.Add(-time.Hour)}
	p := DefaultPolicy()
	p.Container.MinAge = o.minAge
	eo := Options{Reader: n.rt, Statfs: n.rt.Statfs, Remover: n.rt, Policy: p, StateDir: t.TempDir(),
		Now: func() time.Time { return n.now }, Parallel: 1}
	if o.pods || o.podGenless {
		eo.PodSource = func(context.Context, Snapshot) (PodSource, error) {
			return PodSource{Ready: true, RemovablePodUIDs: []string{}}, nil
		}
		if !o.podGenless {
			eo.PodSourceGen = n.podGen.Load
		}
	}
	if o.logs {
		n.podLogs, n.links = t.TempDir(), t.TempDir()
		eo.Policy.PodLogsDir, eo.ContainerLogsDir, eo.ScanLogs = n.podLogs, n.links, true
		n.ageDirs(t)
	}
	e, err := New(eo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	n.e = e
	e.setStream(EventStream{Live: true})
	return n
}

// ageDirs sets the log dirs' mtimes a minute back, so that their stamps
// are not racy (racyStamp).
func (n *quietNode) ageDirs(t *testing.T) {
	t.Helper()
	old := time.Now().Add(-time.Minute)
	for _, d := range []string{n.podLogs, n.links} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// event delivers one container event through the follower's reader.
func (n *quietNode) event(typ ContainerEventType) { n.eventOf(typ, "") }

// eventOf delivers one event of the container or sandbox id.
func (n *quietNode) eventOf(typ ContainerEventType, id string) {
	ch := make(chan ContainerEvent, 1)
	ch <- ContainerEvent{Type: typ, ContainerID: id}
	close(ch)
	_ = n.e.readEvents(ch)
}

// twoInits gives the running pod two dead attempts of its init
// container: the first pass removes the older (MaxPerPodContainer 1),
// and a plan of the node without it removes nothing.
func twoInits(t *testing.T, n *quietNode) {
	n.rt.Containers["old"] = Container{ID: "old", PodSandboxID: "s1", PodUID: "u1", Name: "init", Attempt: 0, State: ContainerExited, CreatedAt: execNow.Add(-time.Hour)}
	n.rt.Containers["new"] = Container{ID: "new", PodSandboxID: "s1", PodUID: "u1", Name: "init", Attempt: 1, State: ContainerExited, CreatedAt: execNow.Add(-30 * time.Minute)}
}

// listings counts the runtime's container listings so far.
func (n *quietNode) listings() int {
	n.rt.Mu.Lock()
	defer n.rt.Mu.Unlock()
	k := 0
	for _, c := range n.rt.Calls {
		if strings.HasPrefix(c, "ListContainers ") {
			k++
		}
	}
	return k
}

// stateFiles reads every file of the state dir.
func stateFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if ent.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[ent.Name()] = string(b)
	}
	return out
}

// oldSandbox gives the running pod an older not-ready sandbox whose one
// container is dead, and a newer attempt of that container in the ready
// one: the first pass removes the container and the sandbox it leaves
// empty.
func oldSandbox(t *testing.T, n *quietNode) {
	n.rt.Sandboxes["s0"] = Sandbox{ID: "s0", PodUID: "u1", State: SandboxNotReady, CreatedAt: execNow.Add(-2 * time.Hour)}
	n.rt.Containers["old"] = Container{ID: "old", PodSandboxID: "s0", PodUID: "u1", Name: "init", Attempt: 0, State: ContainerExited, CreatedAt: execNow.Add(-2 * time.Hour)}
	n.rt.Containers["new"] = Container{ID: "new", PodSandboxID: "s1", PodUID: "u1", Name: "init", Attempt: 1, State: ContainerExited, CreatedAt: execNow.Add(-30 * time.Minute)}
}

// A periodic container pass on a node that has not changed since the last
// full one, which removed nothing, lists nothing and says why; each
// condition, broken alone, makes it run in full.
func TestPeriodicContainerPassSkipsAnUnchangedNode(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		o    quietOptions
		// first sets up the node before the first, full, pass.
		first func(t *testing.T, n *quietNode)
		// change happens between the two passes.
		change func(t *testing.T, n *quietNode)
		// forced runs the second pass as the scheduler's forced one.
		forced   bool
		wantSkip bool
	}{
		{name: "an unchanged node is skipped", wantSkip: true},
		{name: "an unchanged node with a pod source and log dirs is skipped", o: quietOptions{pods: true, logs: true}, wantSkip: true},
		{name: "a clock under five minutes on is skipped", change: func(t *testing.T, n *quietNode) { n.now = execNow.Add(StreamSafetyInterval - time.Second) }, wantSkip: true},
		{name: "a container event runs in full", change: func(t *testing.T, n *quietNode) { n.event(ContainerStoppedEvent) }},
		{name: "a deleted container's event runs in full", change: func(t *testing.T, n *quietNode) { n.event(ContainerDeletedEvent) }},
		{name: "a broken stream runs in full", change: func(t *testing.T, n *quietNode) { n.e.setStream(EventStream{Down: "broken"}) }},
		{name: "a stream broken and opened again runs in full", change: func(t *testing.T, n *quietNode) {
			n.e.setStream(EventStream{Down: "broken"})
			n.e.setStream(EventStream{Live: true})
		}},
		{name: "a previous pass with removals, no event since, is skipped", first: twoInits, wantSkip: true},
		{name: "a previous pass with removals, its removal's delete event since, is skipped", first: twoInits,
			change: func(t *testing.T, n *quietNode) { n.eventOf(ContainerDeletedEvent, "old") }, wantSkip: true},
		{name: "a previous pass with removals, its removal's stop and delete events since, is skipped", first: twoInits,
			change: func(t *testing.T, n *quietNode) {
				n.eventOf(ContainerStoppedEvent, "old")
				n.eventOf(ContainerDeletedEvent, "old")
			}, wantSkip: true},
		{name: "a previous pass with removals, its removal's event and another since, runs in full", first: twoInits,
			change: func(t *testing.T, n *quietNode) {
				n.eventOf(ContainerDeletedEvent, "old")
				n.eventOf(ContainerCreatedEvent, "c2")
			}},
		{name: "a previous pass with removals, a kept container's delete event since, runs in full", first: twoInits,
			change: func(t *testing.T, n *quietNode) { n.eventOf(ContainerDeletedEvent, "new") }},
		{name: "a previous pass with removals, a removed ID created since, runs in full", first: twoInits,
			change: func(t *testing.T, n *quietNode) { n.eventOf(ContainerCreatedEvent, "old") }},
		{name: "a previous pass with removals, a broken stream since, runs in full", first: twoInits,
			change: func(t *testing.T, n *quietNode) { n.e.setStream(EventStream{Down: "broken"}) }},
		{name: "a previous pass whose removal failed runs in full", first: func(t *testing.T, n *quietNode) {
			twoInits(t, n)
			n.rt.Fail["RemoveContainer old"] = errTest("busy")
		}, change: func(t *testing.T, n *quietNode) { delete(n.rt.Fail, "RemoveContainer old") }},
		{name: "a previous pass that removed a sandbox, its removals' events since, is skipped", first: oldSandbox,
			change: func(t *testing.T, n *quietNode) {
				n.eventOf(ContainerDeletedEvent, "old")
				n.eventOf(ContainerStoppedEvent, "s0")
				n.eventOf(ContainerDeletedEvent, "s0")
			}, wantSkip: true},
		{name: "a previous pass that removed a sandbox, a started event of it since, runs in full", first: oldSandbox,
			change: func(t *testing.T, n *quietNode) { n.eventOf(ContainerStartedEvent, "s0") }},
		{name: "a previous pass with removals of a container younger than MinAge runs in full", o: quietOptions{minAge: time.Minute}, first: func(t *testing.T, n *quietNode) {
			twoInits(t, n)
			n.rt.Containers["young"] = Container{ID: "young", PodSandboxID: "s1", PodUID: "u1", Name: "side", State: ContainerExited, CreatedAt: execNow.Add(-10 * time.Second)}
		}},
		{name: "a dead container younger than MinAge runs in full", o: quietOptions{minAge: time.Minute}, first: func(t *testing.T, n *quietNode) {
			n.rt.Containers["young"] = Container{ID: "young", PodSandboxID: "s1", PodUID: "u1", Name: "init", State: ContainerExited, CreatedAt: execNow.Add(-10 * time.Second)}
		}},
		{name: "a dead container older than MinAge is skipped", o: quietOptions{minAge: time.Minute}, first: func(t *testing.T, n *quietNode) {
			n.rt.Containers["grown"] = Container{ID: "grown", PodSandboxID: "s1", PodUID: "u1", Name: "init", State: ContainerExited, CreatedAt: execNow.Add(-2 * time.Minute)}
		}, wantSkip: true},
		{name: "a changed pod source runs in full", o: quietOptions{pods: true}, change: func(t *testing.T, n *quietNode) { n.podGen.Add(1) }},
		{name: "a pod source without a generation runs in full", o: quietOptions{podGenless: true}},
		{name: "a pod log dir added runs in full", o: quietOptions{logs: true}, change: func(t *testing.T, n *quietNode) {
			if err := os.Mkdir(filepath.Join(n.podLogs, "ns_pod_u2"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a container log link added runs in full", o: quietOptions{logs: true}, change: func(t *testing.T, n *quietNode) {
			if err := os.Symlink("/nowhere", filepath.Join(n.links, "p_ns_c-abc.log")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a log dir changed just before the pass runs in full", o: quietOptions{logs: true}, first: func(t *testing.T, n *quietNode) {
			now := time.Now()
			if err := os.Chtimes(n.links, now, now); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "five minutes on runs in full", change: func(t *testing.T, n *quietNode) { n.now = execNow.Add(StreamSafetyInterval) }},
		{name: "a clock stepped back runs in full", change: func(t *testing.T, n *quietNode) { n.now = execNow.Add(-time.Second) }},
		{name: "a forced pass runs in full", forced: true},
		{name: "a stream not live at the first pass runs in full", first: func(t *testing.T, n *quietNode) { n.e.setStream(EventStream{Down: "not yet"}) },
			change: func(t *testing.T, n *quietNode) { n.e.setStream(EventStream{Live: true}) }},
		{name: "a forced pass that failed since runs in full", change: func(t *testing.T, n *quietNode) {
			n.rt.Fail["ListContainers *"] = errTest("unavailable")
			if _, err := n.e.Run(context.Background(), PassContainers); err == nil {
				t.Fatal("the forced pass did not fail")
			}
			delete(n.rt.Fail, "ListContainers *")
		}},
		{name: "a failed first pass runs in full", first: func(t *testing.T, n *quietNode) { n.rt.Fail["ListImages *"] = errTest("unavailable") },
			change: func(t *testing.T, n *quietNode) { delete(n.rt.Fail, "ListImages *") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newQuietNode(t, tc.o)
			s := NewScheduler(n.e, SchedulerOptions{Now: func() time.Time { return n.now }})
			if tc.first != nil {
				tc.first(t, n)
			}
			first, _ := s.pass(ctx, PassContainers, false)
			if first.Skipped != "" {
				t.Fatalf("the first pass was skipped: %s", first.Skipped)
			}
			mutated := len(n.rt.MutatingCalls())
			n.now = n.now.Add(ContainerGCPeriod)
			if tc.change != nil {
				tc.change(t, n)
			}
			before, files := n.listings(), stateFiles(t, n.e.o.StateDir)
			r, err := s.pass(ctx, PassContainers, tc.forced)
			if err != nil {
				t.Fatal(err)
			}
			listed := n.listings() - before
			if !tc.wantSkip {
				if r.Skipped != "" || listed == 0 {
					t.Fatalf("skipped (%q), %d container listings; want a full pass", r.Skipped, listed)
				}
				return
			}
			if listed != 0 || r.Skipped == "" {
				t.Fatalf("%d container listings, skipped %q; want none, and why", listed, r.Skipped)
			}
			want := "unchanged since pass #1 (no container event, "
			if first.Count(OutcomeRemoved) > 0 {
				want = "unchanged since pass #1 (no container event but its own removals', "
			}
			if !strings.HasPrefix(r.Skipped, want) {
				t.Errorf("skipped %q; want it to start %q", r.Skipped, want)
			}
			if r.ID != first.ID+1 || r.Kind != PassContainers || len(r.Items) != 0 || s.Status().LastReport.Skipped == "" {
				t.Errorf("the skipped pass's report: %+v; want pass #%d of containers, no items, the scheduler's last", r, first.ID+1)
			}
			if got := stateFiles(t, n.e.o.StateDir); len(got) != len(files) {
				t.Errorf("state dir files %d, were %d: a skipped pass writes nothing", len(got), len(files))
			} else {
				for name, b := range files {
					if got[name] != b {
						t.Errorf("%s changed: a skipped pass writes nothing", name)
					}
				}
			}
			if got := n.rt.MutatingCalls(); len(got) != mutated {
				t.Errorf("mutating calls %v; want the first pass's %d alone", got, mutated)
			}
		})
	}
}

// A one-shot pass (Run, `nodegc gc`) and an image pass always list the
// node, however quiet.
func TestRunAndImagePassesNeverSkip(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(n *quietNode) (PassReport, error)
	}{
		{"Run", func(n *quietNode) (PassReport, error) { return n.e.Run(ctx, PassContainers) }},
		{"a periodic image pass", func(n *quietNode) (PassReport, error) { return n.e.RunPeriodic(ctx, PassImages) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newQuietNode(t, quietOptions{})
			if _, err := n.e.RunPeriodic(ctx, PassContainers); err != nil {
				t.Fatal(err)
			}
			before := n.listings()
			r, err := tc.run(n)
			if err != nil {
				t.Fatal(err)
			}
			if r.Skipped != "" || n.listings() == before {
				t.Errorf("skipped %q, %d listings; want a full pass", r.Skipped, n.listings()-before)
			}
		})
	}
}

// A pass whose plan removes nothing builds no executor: it measures no
// usage of its own (it reports its listing's, and says so), and writes
// neither the journal nor the image records when they did not change.
func TestEmptyPassBuildsNoExecutor(t *testing.T) {
	ctx := context.Background()
	n := newQuietNode(t, quietOptions{})
	n.rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10}
	n.rt.Containers["c1"] = Container{ID: "c1", PodSandboxID: "s1", PodUID: "u1", Name: "app", ImageID: "i1", State: ContainerRunning, CreatedAt: execNow.Add(-time.Hour)}
	if _, err := n.e.Run(ctx, PassContainers); err != nil {
		t.Fatal(err)
	}
	n.now = n.now.Add(time.Minute)
	files := stateFiles(t, n.e.o.StateDir)
	n.rt.Mu.Lock()
	n.rt.Calls = nil
	n.rt.Mu.Unlock()
	r, err := n.e.Run(ctx, PassContainers)
	if err != nil {
		t.Fatal(err)
	}
	n.rt.Mu.Lock()
	imageFs := 0
	for _, c := range n.rt.Calls {
		if strings.HasPrefix(c, "ImageFs ") {
			imageFs++
		}
	}
	n.rt.Mu.Unlock()
	if imageFs != 1 {
		t.Errorf("%d image filesystem readings; want 1, the listing's", imageFs)
	}
	if r.UsageFrom != UsageFromListing || r.ImageFsBefore == nil || r.ImageFsAfter == nil || r.MeasuredBytesFreed != nil {
		t.Errorf("usage from %q, before %v, after %v, measured %v; want the listing's, not measured", r.UsageFrom, r.ImageFsBefore, r.ImageFsAfter, r.MeasuredBytesFreed)
	}
	got := stateFiles(t, n.e.o.StateDir)
	for name, b := range files {
		if got[name] != b {
			t.Errorf("%s was written by a pass with nothing to remove", name)
		}
	}
}

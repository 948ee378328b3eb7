package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/executor"
	"github.com/nodegc/nodegc/engine/state"
	"github.com/nodegc/nodegc/internal/proctest"
)

// newPoolEngine is newTestEngine with a chosen pool width.
func newPoolEngine(t *testing.T, rt *fakeRuntime, parallel int) *Engine {
	t.Helper()
	e := newTestEngine(t, rt, false)
	e.o.Parallel = parallel
	return e
}

// reclaimPlan plans the removal of the images, in order, for reclaim (no
// target).
func reclaimPlan(ids ...string) Plan {
	p := Plan{Pass: PassReclaimAll, EvaluatedAt: execNow}
	for _, id := range ids {
		p.ImageGC.Remove = append(p.ImageGC.Remove, ImageRemoval{ID: id, SizeBytes: 10, Reason: RemoveForReclaim})
	}
	return p
}

func addImages(rt *fakeRuntime, ids ...string) {
	for _, id := range ids {
		rt.Images[id] = Image{ID: id, SizeBytes: 10, RepoTags: []string{id + ":1"}}
	}
}

func TestApplyStopsAfterTheItemsInFlight(t *testing.T) {
	for _, parallel := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallel %d: cancelling the pass lets the items in flight finish and journal, and starts no other", parallel), func(t *testing.T) {
			rt := newFakeRuntime()
			ids := []string{"i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8", "i9"}
			addImages(rt, ids...)
			e := newPoolEngine(t, rt, parallel)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The stop arrives during the first removal: no item has
			// finished, so at most parallel items have started.
			rt.Before = func(method, id string) { cancel() }
			r, err := e.Apply(ctx, reclaimPlan(ids...))
			if err != nil {
				t.Fatal(err)
			}
			calls := rt.MutatingCalls()
			if len(calls) == 0 || r.Count(OutcomeRemoved) != len(calls) {
				t.Errorf("calls %v, removed %d: the items in flight must finish", calls, r.Count(OutcomeRemoved))
			}
			if len(calls) > parallel {
				t.Errorf("calls %v: only the items in flight (at most %d) may run", calls, parallel)
			}
			if r.Stopped == "" || r.Undone != len(ids)-len(calls) || r.Count(OutcomeNotRun) != r.Undone {
				t.Errorf("stopped %q undone %d not-run %d, want stopped and %d", r.Stopped, r.Undone, r.Count(OutcomeNotRun), len(ids)-len(calls))
			}
			lines, err := ReadJournalLines(e.o.StateDir)
			if err != nil {
				t.Fatal(err)
			}
			removed, _ := ReadJournal(e.o.StateDir)
			if len(removed) != len(calls) || len(OpenIntents(lines)) != 0 {
				t.Errorf("journal: %d removals, %d open intents for %d removals: every removal needs its intent and outcome", len(removed), len(OpenIntents(lines)), len(calls))
			}
			for _, l := range lines {
				if l.Op == JournalNotRun && slices.Contains(calls, "RemoveImage "+l.ID) {
					t.Errorf("%s was removed but journalled as not run", l.ID)
				}
			}
		})
	}
}

func TestApplyParallelOneIsTheSerialOrder(t *testing.T) {
	rt := newFakeRuntime()
	var want []string
	p := Plan{Pass: PassFull, EvaluatedAt: execNow}
	for i := range 6 {
		id := fmt.Sprintf("c%d", i)
		rt.Containers[id] = Container{ID: id, State: ContainerExited, PodSandboxID: "gone"}
		p.ContainerGC.Remove = append(p.ContainerGC.Remove, ContainerRemoval{ID: id, Reason: RemovePodRemovable})
		want = append(want, "RemoveContainer "+id)
	}
	for i := range 4 {
		id := fmt.Sprintf("s%d", i)
		rt.Sandboxes[id] = Sandbox{ID: id, State: SandboxNotReady}
		p.SandboxGC.Remove = append(p.SandboxGC.Remove, SandboxRemoval{ID: id, Reason: "pod-removable"})
		want = append(want, "StopSandbox "+id, "RemoveSandbox "+id)
	}
	for _, id := range []string{"i5", "i3", "i9", "i1"} {
		addImages(rt, id)
		p.ImageGC.Remove = append(p.ImageGC.Remove, ImageRemoval{ID: id, SizeBytes: 10, Reason: RemoveForReclaim})
		want = append(want, "RemoveImage "+id)
	}
	e := newPoolEngine(t, rt, 1)
	if _, err := e.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); !slices.Equal(got, want) {
		t.Errorf("--parallel 1 calls:\n%v\nwant the plan's order:\n%v", got, want)
	}
}

func TestApplyKeepsTheOrderBetweenKinds(t *testing.T) {
	rt := newFakeRuntime()
	p := Plan{Pass: PassFull, EvaluatedAt: execNow}
	for i := range 20 {
		id := fmt.Sprintf("c%02d", i)
		rt.Containers[id] = Container{ID: id, State: ContainerExited, PodSandboxID: fmt.Sprintf("s%02d", i)}
		p.ContainerGC.Remove = append(p.ContainerGC.Remove, ContainerRemoval{ID: id, Reason: RemovePodRemovable})
		sid := fmt.Sprintf("s%02d", i)
		rt.Sandboxes[sid] = Sandbox{ID: sid, State: SandboxNotReady}
		p.SandboxGC.Remove = append(p.SandboxGC.Remove, SandboxRemoval{ID: sid, Reason: "pod-removable"})
	}
	e := newPoolEngine(t, rt, 8)
	r, err := e.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Count(OutcomeRemoved); n != 40 {
		t.Errorf("removed %d, want 40: every sandbox's container went in the phase before it (%+v)", n, r.Items)
	}
	calls := rt.MutatingCalls()
	lastContainer, firstSandbox := -1, len(calls)
	for i, c := range calls {
		if strings.HasPrefix(c, "RemoveContainer") {
			lastContainer = i
		} else if firstSandbox == len(calls) {
			firstSandbox = i
		}
	}
	if lastContainer > firstSandbox {
		t.Errorf("calls %v: every container must go before any sandbox", calls)
	}
}

// spacePlan is a triggered space pass over images of the sizes, with the
// target.
func spacePlan(target int64, sizes ...int64) (Plan, []string) {
	p := Plan{Pass: PassImages, EvaluatedAt: execNow}
	p.ImageGC.Triggered, p.ImageGC.BytesToFree = true, target
	var ids []string
	for i, s := range sizes {
		id := fmt.Sprintf("i%02d", i)
		ids = append(ids, id)
		p.ImageGC.Remove = append(p.ImageGC.Remove, ImageRemoval{ID: id, SizeBytes: s, Reason: RemoveForSpace})
	}
	return p, ids
}

func TestApplySpaceTarget(t *testing.T) {
	cases := []struct {
		name    string
		target  int64
		sizes   []int64
		fail    []string
		removed []string
	}{
		{name: "removals stop once the target is reached", target: 100, sizes: []int64{60, 60, 60}, removed: []string{"i00", "i01"}},
		{name: "a failed removal lets the next candidate in", target: 100, sizes: []int64{60, 60, 60}, fail: []string{"i00"}, removed: []string{"i01", "i02"}},
		{name: "a target of zero still removes one", target: 0, sizes: []int64{10, 10}, removed: []string{"i00"}},
		{name: "a failed first removal with a target of zero lets the next one in", target: 0, sizes: []int64{10, 10, 10}, fail: []string{"i00"}, removed: []string{"i01"}},
	}
	for _, tc := range cases {
		for _, parallel := range []int{1, 2, 8} {
			t.Run(fmt.Sprintf("%s (parallel %d)", tc.name, parallel), func(t *testing.T) {
				rt := newFakeRuntime()
				p, ids := spacePlan(tc.target, tc.sizes...)
				addImages(rt, ids...)
				for _, id := range tc.fail {
					rt.Fail["RemoveImage "+id] = errors.New("device busy")
				}
				e := newPoolEngine(t, rt, parallel)
				r, err := e.Apply(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, it := range r.Items {
					if it.Outcome == OutcomeRemoved {
						got = append(got, it.ID)
					}
				}
				if !slices.Equal(got, tc.removed) {
					t.Errorf("removed %v, want %v", got, tc.removed)
				}
			})
		}
	}
}

// TestApplyNeverRemovesMoreThanTheSerialPass runs random plans with random
// failures through the serial pass and through pools of several widths,
// with random delays in the runtime, and compares what they removed. The
// adaptive pool (width 0) runs with a clock that jumps at random, so its
// width moves up and down within a pass.
func TestApplyNeverRemovesMoreThanTheSerialPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 8))
	var widest atomic.Int32 // the most removals the adaptive pool had in flight
	for round := range 60 {
		n := 1 + rng.IntN(12)
		sizes := make([]int64, n)
		var total int64
		for i := range sizes {
			sizes[i] = rng.Int64N(100)
			total += sizes[i]
		}
		target := rng.Int64N(total + 1)
		fails := map[string]bool{}
		for i := range n {
			if rng.IntN(4) == 0 {
				fails[fmt.Sprintf("i%02d", i)] = true
			}
		}
		run := func(parallel int, seed uint64) []string {
			rt := newFakeRuntime()
			p, ids := spacePlan(target, sizes...)
			addImages(rt, ids...)
			for id := range fails {
				rt.Fail["RemoveImage "+id] = errors.New("device busy")
			}
			jitter := rand.New(rand.NewPCG(seed, 1))
			var mu sync.Mutex
			var inFlight atomic.Int32
			rt.Before = func(string, string) {
				mu.Lock()
				d := time.Duration(jitter.IntN(300)) * time.Microsecond
				mu.Unlock()
				if n := inFlight.Add(1); parallel == AutoParallel && n > widest.Load() {
					widest.Store(n)
				}
				time.Sleep(d) // reorders completions; nothing is timed
				inFlight.Add(-1)
			}
			e := newPoolEngine(t, rt, parallel)
			if parallel == AutoParallel {
				e.kneeFor = func(n int) *executor.Knee {
					now := execNow
					return executor.ScriptedKnee(n, func() time.Time {
						mu.Lock()
						defer mu.Unlock()
						now = now.Add(time.Duration(jitter.IntN(20)) * time.Millisecond)
						return now
					}, time.Hour) // no probe backs it off
				}
			}
			r, err := e.Apply(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range rt.MutatingCalls() {
				got = append(got, c)
			}
			for _, it := range r.Items {
				_ = it
			}
			slices.Sort(got)
			return got
		}
		serial := run(1, 0)
		for _, parallel := range []int{2, 3, 8, AutoParallel} {
			got := run(parallel, uint64(round*10+parallel))
			if !slices.Equal(got, serial) {
				t.Fatalf("round %d (sizes %v, target %d, failing %v): parallel %d tried %v, the serial pass %v", round, sizes, target, fails, parallel, got, serial)
			}
		}
	}
	if widest.Load() < 2 {
		t.Errorf("the adaptive pool never had more than %d removal in flight: the test proved nothing of it", widest.Load())
	}
}

func TestApplyRechecksAgainstAViewAContainerEventRefreshes(t *testing.T) {
	t.Run("a container created on a planned image before its turn saves it (parallel 1)", func(t *testing.T) {
		rt := newFakeRuntime()
		ids := []string{"i1", "i2", "i3", "i4", "i5"}
		addImages(rt, ids...)
		e := newPoolEngine(t, rt, 1)
		rt.Before = func(method, id string) {
			if method == "RemoveImage" && id == "i2" {
				rt.Mu.Lock()
				rt.Containers["new"] = Container{ID: "new", ImageRef: "i4:1", State: ContainerCreated}
				rt.Mu.Unlock()
				e.ContainerEvent()
			}
		}
		r, err := e.Apply(context.Background(), reclaimPlan(ids...))
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(r); got["i4"] != OutcomeSkipped || got["i5"] != OutcomeRemoved || got["i3"] != OutcomeRemoved {
			t.Errorf("outcomes %v: i4 must be kept, the others removed", got)
		}
	})
	t.Run("a container created during the container phase saves a planned image, event or not: the image phase lists afresh (parallel 4)", func(t *testing.T) {
		rt := newFakeRuntime()
		rt.Containers["c1"] = Container{ID: "c1", State: ContainerExited}
		ids := []string{"i1", "i2", "i3", "i4", "i5", "i6"}
		addImages(rt, ids...)
		e := newPoolEngine(t, rt, 4)
		rt.Before = func(method, id string) {
			if method == "RemoveContainer" {
				rt.Mu.Lock()
				rt.Containers["new"] = Container{ID: "new", ImageID: "i1", State: ContainerRunning}
				rt.Mu.Unlock()
			}
		}
		p := reclaimPlan(ids...)
		p.ContainerGC.Remove = []ContainerRemoval{{ID: "c1", Reason: RemovePodRemovable}}
		r, err := e.Apply(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(r); got["i1"] != OutcomeSkipped || got["c1"] != OutcomeRemoved || got["i6"] != OutcomeRemoved {
			t.Errorf("outcomes %v: i1 must be kept", got)
		}
	})
	t.Run("the view is not listed again per item", func(t *testing.T) {
		rt := newFakeRuntime()
		var ids []string
		for i := range 50 {
			ids = append(ids, fmt.Sprintf("i%02d", i))
		}
		addImages(rt, ids...)
		e := newPoolEngine(t, rt, 4)
		if _, err := e.Apply(context.Background(), reclaimPlan(ids...)); err != nil {
			t.Fatal(err)
		}
		rt.Mu.Lock()
		lists := 0
		for _, c := range rt.Calls {
			if c == "ListContainers " {
				lists++
			}
		}
		rt.Mu.Unlock()
		// One listing per ViewWindow at most; a fake runtime removes 50
		// images far faster than that, but a slow machine may need a few.
		if lists >= len(ids)/2 {
			t.Errorf("ListContainers called %d times for %d images: the re-check must use the view", lists, len(ids))
		}
	})
}

// failingWriter fails every write after ok writes.
type failingWriter struct {
	mu     sync.Mutex
	f      *os.File
	ok     int
	writes int
}

func (w *failingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.writes > w.ok {
		// A full disk: half the bytes land, then ENOSPC.
		n, _ := w.f.Write(b[:len(b)/2])
		return n, errors.New("no space left on device")
	}
	return w.f.Write(b)
}
func (w *failingWriter) Sync() error { return w.f.Sync() }

func TestJournalFailureStopsThePass(t *testing.T) {
	rt := newFakeRuntime()
	ids := []string{"i1", "i2", "i3", "i4", "i5", "i6"}
	addImages(rt, ids...)
	e := newPoolEngine(t, rt, 1)
	// The intents of all six, i1's started and outcome lines, i2's
	// started line, then the disk is full: the outcome of i2 cannot be
	// written.
	e.journal.WrapWriter(func(f *os.File) state.SyncWriter { return &failingWriter{f: f, ok: 4} })
	r, err := e.Apply(context.Background(), reclaimPlan(ids...))
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); !slices.Equal(got, []string{"RemoveImage i1", "RemoveImage i2"}) {
		t.Errorf("calls %v: the pass must stop before the next removal", got)
	}
	if r.OK() || r.Error == "" || r.Stopped == "" || r.Undone != 4 {
		t.Errorf("report ok %v error %q stopped %v undone %d: the pass must fail", r.OK(), r.Error, r.Stopped, r.Undone)
	}
	// The next pass repairs the torn line and reconciles i2's intent.
	e.journal.WrapWriter(nil)
	r2, err := e.Apply(context.Background(), reclaimPlan())
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Notes) != 2 || !strings.Contains(r2.Notes[0], "torn") || !strings.Contains(r2.Notes[1], "1 removed") {
		t.Errorf("notes %q: want the torn line repaired and i2 reconciled", r2.Notes)
	}
	js, err := ReadJournal(e.o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	got := journalIDs(js)
	if !slices.Equal(got, []string{"i1", "i2"}) || !js[1].Reconciled {
		t.Errorf("journal removals %v: want i1 and i2 (reconciled)", got)
	}
}

func TestJournalIntentWriteFailureRemovesNothing(t *testing.T) {
	rt := newFakeRuntime()
	addImages(rt, "i1", "i2")
	e := newPoolEngine(t, rt, 1)
	e.journal.WrapWriter(func(f *os.File) state.SyncWriter { return &failingWriter{f: f, ok: 0} })
	r, err := e.Apply(context.Background(), reclaimPlan("i1", "i2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Errorf("calls %v: nothing may be removed without its intent on disk", got)
	}
	if r.OK() || r.Undone != 2 {
		t.Errorf("report ok %v undone %d: want a failed pass with both not run", r.OK(), r.Undone)
	}
}

func TestJournalRefusesAPassWithoutRoom(t *testing.T) {
	rt := newFakeRuntime()
	addImages(rt, "i1")
	e := newPoolEngine(t, rt, 1)
	e.journal.SetFreeBytes(func() (int64, error) { return 4096, nil })
	r, err := e.Apply(context.Background(), reclaimPlan("i1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || !strings.Contains(r.Error, "free space there first") || r.Undone != 1 {
		t.Errorf("report error %q undone %d: want a refusal naming the state dir's free space", r.Error, r.Undone)
	}
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Errorf("calls %v: a refused pass removes nothing", got)
	}
}

// queueThenFailWriter is a journal file whose second write waits until a
// line is queued behind it and whose third write (sync's group write of
// that line) fails.
type queueThenFailWriter struct {
	f      *os.File
	j      *state.Journal
	writes atomic.Int32
}

func (w *queueThenFailWriter) Write(b []byte) (int, error) {
	switch w.writes.Add(1) {
	case 1:
	case 2:
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			queued := w.j.QueuedLines()
			if queued > 0 {
				break
			}
		}
	default:
		return 0, errors.New("no space left on device")
	}
	return w.f.Write(b)
}
func (w *queueThenFailWriter) Sync() error { return w.f.Sync() }

func TestAnOutcomeLostAtTheEndOfAPassIsReconciledByTheNext(t *testing.T) {
	rt := newFakeRuntime()
	addImages(rt, "i1", "i2")
	e := newPoolEngine(t, rt, 2)
	e.journal.WrapWriter(func(f *os.File) state.SyncWriter { return &queueThenFailWriter{f: f, j: e.journal} })
	r, err := e.Apply(context.Background(), reclaimPlan("i1", "i2"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Error, "journal write failed") {
		t.Errorf("pass error %q, want the failed journal write", r.Error)
	}
	e.journal.WrapWriter(nil)
	if _, err := e.Apply(context.Background(), reclaimPlan()); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadJournalLines(e.o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if open := OpenIntents(lines); len(open) != 0 {
		t.Errorf("after the next pass %d intents are still open (%s): the outcome lost by the end-of-pass sync was not reconciled", len(open), open[0].ID)
	}
}

// blockedJournal opens a journal in a new dir whose first write blocks
// until release is closed (closed at cleanup); writes counts the writes.
func blockedJournal(t *testing.T) (j *testJournal, release chan struct{}, writes *atomic.Int32) {
	t.Helper()
	j = openTestJournal(t)
	release, writes = make(chan struct{}), new(atomic.Int32)
	var once sync.Once
	j.WrapWriter(func(f *os.File) state.SyncWriter {
		j.bw = &blockingWriter{f: f, first: func() { writes.Add(1); once.Do(func() { <-release }) }, syncs: new(atomic.Int32)}
		return j.bw
	})
	return j, release, writes
}

func TestJournalGroupCommit(t *testing.T) {
	j, release, _ := blockedJournal(t)
	dir := j.dir
	const writers = 10
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if err := j.Write(JournalEntry{Op: JournalIntent, Kind: ItemImage, ID: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	// Wait until the first write is in flight and the other nine lines
	// are queued behind it, then let it finish.
	for {
		queued := j.QueuedLines()
		if queued == writers-1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if syncs := j.bw.syncs.Load(); syncs != 2 {
		t.Errorf("%d fsyncs for %d lines, want 2 (one, then one for the group that queued behind it)", syncs, writers)
	}
	lines, err := ReadJournalLines(dir)
	if err != nil || len(lines) != writers {
		t.Errorf("journal has %d lines (%v), want %d", len(lines), err, writers)
	}
}

// blockingWriter runs first before its first write.
// TestOutcomeLinesQueuedBehindAWriteGoOutTogether pins the group write of
// outcome lines: the lines that arrive while one is being written go out
// in one write after it (here at sync), and none is lost.
func TestOutcomeLinesQueuedBehindAWriteGoOutTogether(t *testing.T) {
	j, release, writes := blockedJournal(t)
	dir := j.dir
	const writers = 10
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := j.WriteLazy(JournalEntry{Op: JournalRemoved, Kind: ItemImage, ID: "0"}); err != nil {
			t.Error(err)
		}
	})
	for writes.Load() != 1 { // the first write is in flight
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < writers; i++ {
		wg.Go(func() {
			if err := j.WriteLazy(JournalEntry{Op: JournalRemoved, Kind: ItemImage, ID: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); ; { // the other nine are queued behind it
		queued := j.QueuedLines()
		if queued == writers-1 {
			break
		}
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("%d lines queued behind the write in flight, want %d", queued, writers-1)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("%d writes for %d lines, want 2 (one, then one for the lines queued behind it)", n, writers)
	}
	lines, err := ReadJournalLines(dir)
	if err != nil || len(lines) != writers {
		t.Errorf("journal has %d lines (%v), want %d", len(lines), err, writers)
	}
}

type blockingWriter struct {
	f     *os.File
	first func()
	syncs *atomic.Int32 // groups synced
	err   error         // when set, every write fails with it, as on a full disk
}

func (w *blockingWriter) Write(b []byte) (int, error) {
	w.first()
	if w.err != nil {
		return 0, w.err
	}
	return w.f.Write(b)
}
func (w *blockingWriter) Sync() error { w.syncs.Add(1); return w.f.Sync() }

func TestApplyRemovesAContainersLogsWithIt(t *testing.T) {
	rt := newFakeRuntime()
	root := t.TempDir()
	podLogs, links := filepath.Join(root, "pods"), filepath.Join(root, "containers")
	podDir := filepath.Join(podLogs, "ns_web_uid1", "app")
	outside := filepath.Join(root, "outside.log")
	for _, d := range []string{podDir, links} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logFile := filepath.Join(podDir, "0.log")
	for _, f := range []string{logFile, outside} {
		if err := os.WriteFile(f, []byte("log"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(links, "web_ns_app-c1.log")
	if err := os.Symlink(logFile, link); err != nil {
		t.Fatal(err)
	}
	otherLink := filepath.Join(links, "web_ns_app-c2.log")
	if err := os.Symlink(outside, otherLink); err != nil {
		t.Fatal(err)
	}
	rt.Sandboxes["s1"] = Sandbox{ID: "s1", PodName: "web", PodNamespace: "ns", PodUID: "uid1", State: SandboxReady}
	rt.Containers["c1"] = Container{ID: "c1", Name: "app", PodSandboxID: "s1", PodUID: "uid1", State: ContainerExited, LogPath: logFile}
	rt.Containers["c2"] = Container{ID: "c2", Name: "app", PodSandboxID: "s1", PodUID: "uid1", State: ContainerExited, LogPath: outside}
	e := newPoolEngine(t, rt, 1)
	e.o.Policy.PodLogsDir, e.o.ContainerLogsDir = podLogs, links
	p := Plan{Pass: PassContainers, EvaluatedAt: execNow, ContainerGC: ContainerPlan{Remove: []ContainerRemoval{
		{ID: "c1", Reason: RemovePerContainerLimit, PodName: "web", PodNamespace: "ns"}, {ID: "c2", Reason: RemovePerContainerLimit, PodName: "web", PodNamespace: "ns"}}}}
	r, err := e.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{logFile, link, otherLink} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there (%v): the kubelet removes it with its container", gone, err)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("%s outside podLogsDir was touched: %v", outside, err)
	}
	if n := r.Count(OutcomeRemoved); n != 5 {
		t.Errorf("removed %d items, want 2 containers, 1 log file, 2 links: %+v", n, r.Items)
	}
	js, _ := ReadJournal(e.o.StateDir)
	var logs int
	for _, j := range js {
		if j.Kind == ItemLog && j.Reason == ReasonContainerRemoved {
			logs++
		}
	}
	if logs != 3 {
		t.Errorf("journal has %d log removals, want 3", logs)
	}
}

func TestApplyPublishesProgress(t *testing.T) {
	rt := newFakeRuntime()
	ids := []string{"i1", "i2", "i3"}
	addImages(rt, ids...)
	e := newPoolEngine(t, rt, 2)
	var mu sync.Mutex
	var got []Progress
	defer e.OnProgress(func(p Progress) { mu.Lock(); got = append(got, p); mu.Unlock() })()
	if _, err := e.Apply(context.Background(), reclaimPlan(ids...)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 || got[0].ItemsDone != 0 || got[3].ItemsDone != 3 || got[3].Items != 3 || got[3].BytesDone != 30 || got[3].Bytes != 30 {
		t.Errorf("progress %+v: want 0 of 3 at the start, then one per item up to 3 of 3, 30 of 30 bytes", got)
	}
}

func TestReconciliationJournalsOnlyWhatItKnows(t *testing.T) {
	boot := state.BootID()
	if boot == "" {
		t.Skip("no boot ID on this system")
	}
	const sameBoot, otherBoot, noBoot = "same", "other", "none"
	for _, tc := range []struct {
		name    string
		kind    ItemKind
		boot    string // the intent's boot: this one, another, or none (an older nodegc)
		started bool   // a started line follows the intent
		exists  bool   // the runtime still has the item
		want    JournalOp
	}{
		{"an image whose call was never sent is not-run though it is gone", ItemImage, sameBoot, false, false, JournalNotRun},
		{"an image whose call was never sent and that is still there is not-run", ItemImage, sameBoot, false, true, JournalNotRun},
		{"an image whose call was sent and that is gone is removed", ItemImage, sameBoot, true, false, JournalRemoved},
		{"an image whose call was sent and that is there again is unknown", ItemImage, sameBoot, true, true, JournalUnknown},
		{"a container whose call was sent and that is still there is not-removed", ItemContainer, sameBoot, true, true, JournalNotRemoved},
		{"a container whose call was sent and that is gone is removed", ItemContainer, sameBoot, true, false, JournalRemoved},
		{"after a reboot a gone image without a started line is unknown", ItemImage, otherBoot, false, false, JournalUnknown},
		{"after a reboot an image still there without a started line is unknown", ItemImage, otherBoot, false, true, JournalUnknown},
		{"after a reboot a container still there is not-removed", ItemContainer, otherBoot, false, true, JournalNotRemoved},
		{"an intent of an older nodegc, without a boot ID, whose image is gone is unknown", ItemImage, noBoot, false, false, JournalUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := map[string]string{sameBoot: boot, otherBoot: "another-boot", noBoot: ""}[tc.boot]
			lines := fmt.Sprintf(`{"op":"intent","time":%q,"pass":"r/3","kind":%q,"id":"x","reason":"space","boot":%q}`+"\n",
				execNow.Add(-time.Hour).Format(time.RFC3339Nano), tc.kind, b)
			if tc.started {
				lines += fmt.Sprintf(`{"op":"started","pass":"r/3","kind":%q,"id":"x","reason":""}`+"\n", tc.kind)
			}
			rt := newFakeRuntime()
			if tc.exists && tc.kind == ItemImage {
				addImages(rt, "x")
			}
			if tc.exists && tc.kind == ItemContainer {
				rt.Containers["x"] = Container{ID: "x", State: ContainerExited}
			}
			all, got := startWithJournal(t, t.TempDir(), lines, rt, rt.Statfs)
			if len(OpenIntents(all)) != 0 {
				t.Errorf("open intents %+v after the start, want none", OpenIntents(all))
			}
			if got["x"] != tc.want {
				t.Errorf("reconciled %q, want %q", got["x"], tc.want)
			}
		})
	}
}

// startWithJournal starts a deleting engine over rt in dir, which holds
// the journal lines, and takes a snapshot (which reconciles); it returns
// the journal's lines after it and the ops of the reconciled ones by ID.
// tune, when given, adjusts the engine before that snapshot.
func startWithJournal(t *testing.T, dir, lines string, rt interface {
	Reader
	Remover
}, statfs func(string) (FsStats, error), tune ...func(*Engine)) ([]JournalEntry, map[string]JournalOp) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, state.JournalFile), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Reader: rt, Statfs: statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: func() time.Time { return execNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, f := range tune {
		f(e)
	}
	if _, err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	all, err := ReadJournalLines(dir)
	if err != nil {
		t.Fatal(err)
	}
	reconciled := map[string]JournalOp{}
	for _, l := range all {
		if l.Reconciled {
			reconciled[l.ID] = l.Op
		}
	}
	return all, reconciled
}

// lateRemovalRuntime is a runtime that finishes removing the late images
// only after it was first asked about them, as containerd can after the
// process whose RemoveImage was in flight was killed.
type lateRemovalRuntime struct {
	*fakeRuntime
	late map[string]bool
}

func (l *lateRemovalRuntime) ImageStatus(ctx context.Context, id string) (Image, error) {
	img, err := l.fakeRuntime.ImageStatus(ctx, id)
	l.Mu.Lock()
	if l.late[id] {
		delete(l.late, id)
		delete(l.Images, id) // the removal in flight completes now
	}
	l.Mu.Unlock()
	return img, err
}

func TestReconcileWaitsForARemovalInFlightToSettle(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   string // the intents' time
		want map[string]JournalOp
	}{
		{"a recent intent's item that goes while asked about is removed", execNow.Add(-time.Second).Format(time.RFC3339Nano),
			map[string]JournalOp{"late": JournalRemoved, "kept": JournalUnknown}},
		{"an old intent's item is taken as the runtime shows it at once", execNow.Add(-time.Hour).Format(time.RFC3339Nano),
			map[string]JournalOp{"late": JournalUnknown, "kept": JournalUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := fmt.Sprintf(`{"op":"intent","time":%q,"pass":"r/3","kind":"image","id":"late","reason":"space"}
{"op":"intent","time":%q,"pass":"r/3","kind":"image","id":"kept","reason":"space"}
{"op":"started","pass":"r/3","kind":"image","id":"late","reason":""}
{"op":"started","pass":"r/3","kind":"image","id":"kept","reason":""}
`, tc.at, tc.at)
			rt := &lateRemovalRuntime{fakeRuntime: newFakeRuntime(), late: map[string]bool{"late": true}}
			addImages(rt.fakeRuntime, "late", "kept")
			settle := func(e *Engine) { e.rec.Settle = 300 * time.Millisecond }
			if _, got := startWithJournal(t, dir, lines, rt, rt.Statfs, settle); !maps.Equal(got, tc.want) {
				t.Errorf("reconciled %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSchedulerPublishesProgress(t *testing.T) {
	rt := newFakeRuntime()
	addImages(rt, "i1", "i2")
	rt.Fs = FsStats{Mountpoint: "/fake", CapacityBytes: 100, AvailableBytes: 1, UsedBytes: 99}
	e := newPoolEngine(t, rt, 1)
	e.o.Policy.Image.MinAge = 0
	s := NewScheduler(e, SchedulerOptions{})
	ch, unsubscribe := s.Subscribe()
	defer unsubscribe()
	if _, err := s.Force(context.Background(), PassReclaimAll); err != nil {
		t.Fatal(err)
	}
	var last *Progress
	for {
		select {
		case n := <-ch:
			if n.Progress != nil {
				last = n.Progress
			}
			continue
		default:
		}
		break
	}
	if last == nil || last.ItemsDone != last.Items || last.Items == 0 {
		t.Errorf("last progress %+v: want a notice with every planned item done", last)
	}
}

// hangingRuntime never answers ImageStatus until its context ends (or
// release is closed, when the test ends, so a call a failed test left
// hung returns); askedCh, when set, is told of every call as it begins.
type hangingRuntime struct {
	*fakeRuntime
	asked   atomic.Int32
	askedCh chan struct{}
	release chan struct{}
}

func (h *hangingRuntime) ImageStatus(ctx context.Context, id string) (Image, error) {
	h.asked.Add(1)
	if h.askedCh != nil {
		select {
		case h.askedCh <- struct{}{}:
		default:
		}
	}
	select {
	case <-ctx.Done():
		return Image{}, ctx.Err()
	case <-h.release:
		return Image{}, errors.New("released at the end of the test")
	}
}

// TestReconciliationEndsWithItsContextAndItsBudget pins that a runtime
// that never answers holds the first snapshot back only until the
// reconciliation's budget or a signal. Nothing is timed: the runtime
// answers only when the call's context ends, so a snapshot that returns
// was ended by the budget (the only bound when no signal comes) or by the
// signal (the only bound when the budget is an hour).
func TestReconciliationEndsWithItsContextAndItsBudget(t *testing.T) {
	// An intent whose call was sent: only the runtime can settle it.
	lines := `{"op":"intent","pass":"r/3","kind":"image","id":"i1","reason":"space"}
{"op":"started","pass":"r/3","kind":"image","id":"i1","reason":""}
`
	// snapshot takes a snapshot and returns its error, and fails the test
	// if it has not returned within proctest.Hang (it hangs: nothing
	// ended the reconciliation).
	snapshot := func(t *testing.T, e *Engine, ctx context.Context, what string) error {
		t.Helper()
		_, err := proctest.Returns(t, what, func() (Snapshot, error) { return e.Snapshot(ctx) })
		return err
	}
	for _, tc := range []struct {
		name   string
		cancel bool // the snapshot's context is cancelled (a signal) once the runtime is asked
		budget time.Duration
	}{
		{"a runtime that hangs holds the first snapshot back no longer than the budget", false, 300 * time.Millisecond},
		{"a signal ends it at once", true, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, state.JournalFile), []byte(lines), 0o600); err != nil {
				t.Fatal(err)
			}
			rt := &hangingRuntime{fakeRuntime: newFakeRuntime(), askedCh: make(chan struct{}, 1), release: make(chan struct{})}
			e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: func() time.Time { return execNow }})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			e.rec.Budget = tc.budget
			// Deferred after Close, so it runs first: a snapshot a failed
			// test left hung on the runtime returns and frees the engine.
			defer close(rt.release)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					select {
					case <-rt.askedCh:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			_ = snapshot(t, e, ctx, "the first snapshot")
			if tc.cancel && rt.asked.Load() == 0 {
				t.Fatal("the snapshot returned before the reconciliation asked the runtime about i1")
			}
			all, _ := ReadJournalLines(dir)
			if len(OpenIntents(all)) != 1 {
				t.Errorf("open intents %+v, want i1 left open for the next try", OpenIntents(all))
			}
			// The next snapshot does not ask again before reconcileRetry
			// (were it to ask, the budget would end its wait).
			e.rec.Budget = 300 * time.Millisecond
			asked := rt.asked.Load()
			if err := snapshot(t, e, context.Background(), "the next snapshot"); err != nil {
				t.Fatal(err)
			}
			if n := rt.asked.Load(); n != asked {
				t.Errorf("the next snapshot asked the hanging runtime again (%d more calls)", n-asked)
			}
		})
	}
}

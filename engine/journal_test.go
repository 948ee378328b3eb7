package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/state"
)

// Issue 8 item 7: a journal write that fails stops the pass before the
// next removal and fails it; a torn last line is cut off on open.

func TestJournalWriteFailureStopsThePass(t *testing.T) {
	rt := newFakeRuntime()
	for _, id := range []string{"i1", "i2", "i3"} {
		rt.Images[id] = Image{ID: id, SizeBytes: 10}
	}
	e := newTestEngine(t, rt, false)
	writes := 0
	e.journal.WrapWriter(func(f *os.File) state.SyncWriter {
		return &hookedWriter{SyncWriter: f, before: func() error {
			// Write 1: the intents of all three; 2 and 3: i1's started and
			// outcome lines; 4: i2's started line; 5: the outcome of i2 fails.
			if writes++; writes == 5 {
				return errors.New("no space left on device")
			}
			return nil
		}}
	})
	r, err := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Remove: []ImageRemoval{
		{ID: "i1", SizeBytes: 10, Reason: RemoveForSpace}, {ID: "i2", SizeBytes: 10, Reason: RemoveForSpace}, {ID: "i3", SizeBytes: 10, Reason: RemoveForSpace}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); len(got) != 2 {
		t.Errorf("mutating calls %v, want i1 and i2 only: nothing after the failed journal write", got)
	}
	if r.OK() || !strings.Contains(r.Error, "journal write failed") || r.Undone != 1 || r.Items[2].Outcome != OutcomeNotRun {
		t.Errorf("report ok=%v error=%q undone=%d items=%+v; want a failed pass with i3 not run", r.OK(), r.Error, r.Undone, r.Items)
	}
}

func TestATornJournalLineIsCutOnOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, state.JournalFile)
	os.WriteFile(path, []byte(`{"id":"a","kind":"image"}`+"\n"+`{"id":"b","ki`), 0o600)
	rt := newFakeRuntime()
	rt.Images["c"] = Image{ID: "c", SizeBytes: 1}
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: func() time.Time { return execNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if w := e.Warning(); w == nil || !strings.Contains(w.Error(), "torn") {
		t.Errorf("warning %v, want one about the torn line", w)
	}
	if _, err := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages,
		ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "c", SizeBytes: 1, Reason: RemoveForSpace}}}}); err != nil {
		t.Fatal(err)
	}
	js, err := ReadJournal(dir)
	if err != nil || len(js) != 2 || js[0].ID != "a" || js[1].ID != "c" {
		t.Errorf("journal %+v (%v), want a then c on lines of their own", js, err)
	}
}

// TestCancelStopsAfterTheItemInFlight pins issue 8 item 10: cancelling a
// pass's context lets the item in flight finish and be journalled, starts
// nothing more, and reports how many items were left undone.
func TestCancelStopsAfterTheItemInFlight(t *testing.T) {
	rt := newFakeRuntime()
	for _, id := range []string{"i1", "i2", "i3"} {
		rt.Images[id] = Image{ID: id, SizeBytes: 10}
	}
	e := newTestEngine(t, rt, false)
	ctx, cancel := context.WithCancel(context.Background())
	rt.Before = func(method, id string) {
		if id == "i1" {
			cancel() // the signal arrives while i1 is being removed
		}
	}
	r, err := e.Apply(ctx, Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Remove: []ImageRemoval{
		{ID: "i1", SizeBytes: 10, Reason: RemoveForSpace}, {ID: "i2", SizeBytes: 10, Reason: RemoveForSpace}, {ID: "i3", SizeBytes: 10, Reason: RemoveForSpace}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); len(got) != 1 || r.Items[0].Outcome != OutcomeRemoved {
		t.Errorf("mutating calls %v, item %+v; want i1 removed and nothing else", got, r.Items[0])
	}
	if r.Stopped == "" || r.Undone != 2 || r.OK() {
		t.Errorf("stopped %q undone %d ok %v; want stopped with 2 undone", r.Stopped, r.Undone, r.OK())
	}
	if js, err := ReadJournal(e.o.StateDir); err != nil || len(js) != 1 || js[0].ID != "i1" {
		t.Errorf("journal %+v (%v), want i1", js, err)
	}
}

// startedOnFile reports whether the journal in stateDir holds, as it
// reads now, a started line for id; false when it cannot be read.
func startedOnFile(stateDir, id string) bool {
	all, err := state.ReadJournalAll(stateDir)
	return err == nil && slices.ContainsFunc(all, func(l JournalEntry) bool { return l.Op == JournalStarted && l.ID == id })
}

func TestEveryRemovalCallFollowsItsStartedLine(t *testing.T) {
	for _, parallel := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallel %d: the file holds an item's started line when its call is sent, and no other item's", parallel), func(t *testing.T) {
			rt := newFakeRuntime()
			images := []string{"i1", "i2", "i3", "i4", "i5", "i6"}
			addImages(rt, images...)
			plan := reclaimPlan(images...)
			// A sandbox's stop is sent after its started line too.
			rt.Containers["c1"] = Container{ID: "c1", State: ContainerExited, PodSandboxID: "gone"}
			plan.ContainerGC.Remove = []ContainerRemoval{{ID: "c1", Reason: RemovePodRemovable}}
			rt.Sandboxes["s1"] = Sandbox{ID: "s1", State: SandboxNotReady}
			plan.SandboxGC.Remove = []SandboxRemoval{{ID: "s1", Reason: SandboxPodRemovable}}
			ids := append(slices.Clone(images), "c1", "s1")
			e := newPoolEngine(t, rt, parallel)
			var mu sync.Mutex
			var bad []string
			rt.Before = func(method, id string) {
				if !startedOnFile(e.o.StateDir, id) {
					mu.Lock()
					bad = append(bad, id)
					mu.Unlock()
				}
			}
			r, err := e.Apply(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			if n := r.Count(OutcomeRemoved); n != len(ids) {
				t.Fatalf("%d of %d removed: %+v", n, len(ids), r.Items)
			}
			if calls := rt.MutatingCalls(); !slices.Contains(calls, "StopSandbox s1") {
				t.Fatalf("mutating calls %v; want the sandbox stopped", calls)
			}
			if len(bad) > 0 {
				t.Errorf("calls sent before their started line reached the file: %v", bad)
			}
			all, _ := state.ReadJournalAll(e.o.StateDir)
			started := 0
			for _, l := range all {
				if l.Op == JournalStarted {
					started++
				}
			}
			lines, _ := ReadJournalLines(e.o.StateDir)
			if started != len(ids) || len(lines) != 2*len(ids) {
				t.Errorf("%d started lines and %d intent and outcome lines for %d removals, want one started line each, left out of ReadJournalLines", started, len(lines), len(ids))
			}
		})
	}
}

func TestTheJournalRotatesAtACheckpointAndKeepsABoundedHistory(t *testing.T) {
	rt := newFakeRuntime()
	e := newPoolEngine(t, rt, 2)
	e.journal.SetSegmentLimit(1) // every pass's checkpoint rotates
	passes := state.Segments + 3
	for i := range passes {
		id := fmt.Sprintf("i%d", i)
		addImages(rt, id)
		if _, err := e.Apply(context.Background(), reclaimPlan(id)); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k <= state.Segments+1; k++ {
		_, err := os.Stat(filepath.Join(e.o.StateDir, state.SegmentName(k)))
		if exists := err == nil; exists != (k <= state.Segments) {
			t.Errorf("segment %s exists: %v, want %v", state.SegmentName(k), exists, k <= state.Segments)
		}
	}
	js, err := ReadJournal(e.o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	// The current segment is empty (rotated at the last checkpoint); the
	// kept ones hold the last state.Segments passes, oldest first.
	got := journalIDs(js)
	want := []string{}
	for i := passes - state.Segments; i < passes; i++ {
		want = append(want, fmt.Sprintf("i%d", i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("journal removals %v, want %v", got, want)
	}
	// A pass after the rotation still writes into the new segment.
	addImages(rt, "last")
	if r, err := e.Apply(context.Background(), reclaimPlan("last")); err != nil || !r.OK() {
		t.Fatalf("pass after rotation: %v %+v", err, r)
	}
	if js, _ := ReadJournal(e.o.StateDir); len(js) == 0 || js[len(js)-1].ID != "last" {
		t.Errorf("the pass after the rotation is not in the journal")
	}
}

// journalIDs lists the IDs of journal lines, in order.
func journalIDs(js []JournalEntry) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// hookedWriter is a journal writer whose before hook may fail a write
// before it reaches the file.
type hookedWriter struct {
	state.SyncWriter
	before func() error
}

func (w *hookedWriter) Write(b []byte) (int, error) {
	if err := w.before(); err != nil {
		return 0, err
	}
	return w.SyncWriter.Write(b)
}

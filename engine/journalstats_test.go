package engine

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/state"
)

func TestJournalStatsCountLinesAndFailures(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["i1"] = Image{ID: "i1", SizeBytes: 30}
	e := newTestEngine(t, rt, false)
	plan := Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Triggered: true, BytesToFree: 10, Remove: []ImageRemoval{{ID: "i1", SizeBytes: 30, Reason: RemoveForSpace}}}}
	if _, err := e.Apply(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	st := e.JournalStats()
	if st.Lines[JournalIntent] != 1 || st.Lines[JournalRemoved] != 1 || st.FailedWrites != 0 || len(st.Reconciled) != 0 {
		t.Errorf("after one removal: %+v, want one intent, one removed", st)
	}

	t.Run("a failed write counts as a failure and none of its lines", func(t *testing.T) {
		j := openTestJournal(t)
		j.WrapWriter(func(f *os.File) state.SyncWriter { return &failingWriter{f: f, ok: 0} })
		if err := j.Write(JournalEntry{Op: JournalIntent, Kind: ItemImage, ID: "i1"}); err == nil {
			t.Fatal("the write succeeded")
		}
		if st := j.Stats(); st.FailedWrites != 1 || st.Lines[JournalIntent] != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("every line of a group write is counted by its op, reconciled outcomes apart", func(t *testing.T) {
		j := openTestJournal(t)
		if err := j.Write(
			JournalEntry{Op: JournalRemoved, Kind: ItemImage, ID: "i1", Reconciled: true},
			JournalEntry{Op: JournalNotRemoved, Kind: ItemImage, ID: "i2", Reconciled: true},
			JournalEntry{Op: JournalRemoved, Kind: ItemImage, ID: "i3"}); err != nil {
			t.Fatal(err)
		}
		st := j.Stats()
		if st.Lines[JournalRemoved] != 2 || st.Lines[JournalNotRemoved] != 1 || st.Reconciled[JournalRemoved] != 1 || st.Reconciled[JournalNotRemoved] != 1 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("lines queued behind a failed write and dropped by the reset are not counted", func(t *testing.T) {
		j, release, writes := blockedJournal(t)
		j.bw.err = errors.New("no space left on device")
		failed := make(chan error)
		go func() { failed <- j.Write(JournalEntry{Op: JournalIntent, Kind: ItemImage, ID: "i1"}) }()
		for writes.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		// Queued while the write is in flight; the write then fails.
		if err := j.WriteLazy(JournalEntry{Op: JournalRemoved, Kind: ItemImage, ID: "i0"}); err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-failed; err == nil {
			t.Fatal("the blocked write succeeded")
		}
		if _, err := j.Reset(); err != nil {
			t.Fatal(err)
		}
		j.WrapWriter(nil)
		if err := j.Write(JournalEntry{Op: JournalIntent, Kind: ItemImage, ID: "i2"}); err != nil {
			t.Fatal(err)
		}
		st := j.Stats()
		if st.Lines[JournalIntent] != 1 || st.Lines[JournalRemoved] != 0 || st.FailedWrites != 1 {
			t.Errorf("stats %+v, want one intent written and one failed write", st)
		}
	})
	t.Run("a read-only engine has no counts", func(t *testing.T) {
		if st := newTestEngine(t, rt, true).JournalStats(); st.Lines != nil || st.FailedWrites != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestOnSnapshotSeesEverySnapshot(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["i1"] = Image{ID: "i1", SizeBytes: 30}
	var seen []int
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Policy: DefaultPolicy(), Now: func() time.Time { return execNow },
		OnSnapshot: func(s Snapshot) { seen = append(seen, len(s.Images)) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Plan(context.Background(), PassImages); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 1 {
		t.Errorf("OnSnapshot saw %v, want two snapshots of one image", seen)
	}
}

// testJournal is a journal a test opened, with its dir and the blocking
// writer blockedJournal put in front of its file.
type testJournal struct {
	*state.Journal
	dir string
	bw  *blockingWriter
}

// openTestJournal opens a journal in a temp dir, closed at cleanup.
func openTestJournal(t *testing.T) *testJournal {
	t.Helper()
	dir := t.TempDir()
	j, err := state.OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &testJournal{Journal: j, dir: dir}
}

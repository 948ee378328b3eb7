package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestJournalStatsCountLinesAndFailures(t *testing.T) {
	rt := newFakeRuntime()
	rt.images["i1"] = Image{ID: "i1", SizeBytes: 30}
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
		f := tempFile(t)
		cw := &countingWriter{w: &failingWriter{f: f, ok: 0}}
		if _, err := cw.Write([]byte("{\"op\":\"intent\"}\n")); err == nil {
			t.Fatal("the write succeeded")
		}
		if st := cw.stats(); st.FailedWrites != 1 || st.Lines[JournalIntent] != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("reconciled outcomes are counted by op", func(t *testing.T) {
		f := tempFile(t)
		cw := &countingWriter{w: f}
		if _, err := cw.Write([]byte("{\"op\":\"removed\",\"reconciled\":true}\n{\"op\":\"not-removed\",\"reconciled\":true}\n{\"op\":\"removed\"}\n")); err != nil {
			t.Fatal(err)
		}
		st := cw.stats()
		if st.Lines[JournalRemoved] != 2 || st.Reconciled[JournalRemoved] != 1 || st.Reconciled[JournalNotRemoved] != 1 {
			t.Errorf("stats %+v", st)
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
	rt.images["i1"] = Image{ID: "i1", SizeBytes: 30}
	var seen []int
	e, err := New(Options{Reader: rt, Statfs: rt.statfs, Policy: DefaultPolicy(), Now: func() time.Time { return execNow },
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

// tempFile creates a file in a temp dir, closed at cleanup.
func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

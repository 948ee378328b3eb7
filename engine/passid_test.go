package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestJournalPassIDsAreUniqueAcrossRuns: every run used to number its
// passes from 1, so every journal line said "pass":1 whichever run wrote
// it (issue 9). Two runs over one state dir, under the same fixed clock,
// each remove one image in their first pass.
func TestJournalPassIDsAreUniqueAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	var reports []PassReport
	for _, id := range []string{"i1", "i2"} {
		rt := newFakeRuntime()
		rt.Images[id] = Image{ID: id, SizeBytes: 10}
		e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: func() time.Time { return execNow }})
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{
			Remove: []ImageRemoval{{ID: id, SizeBytes: 10, Reason: RemoveForAge}}}})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}
	j, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("each run's first pass is numbered 1 within the run", func(t *testing.T) {
		if reports[0].ID != 1 || reports[1].ID != 1 {
			t.Errorf("IDs %d and %d, want 1 and 1", reports[0].ID, reports[1].ID)
		}
	})
	t.Run("the journal's pass fields differ between the runs", func(t *testing.T) {
		if len(j) != 2 {
			t.Fatalf("journal has %d lines, want 2: %+v", len(j), j)
		}
		if j[0].Pass == "" || j[0].Pass == j[1].Pass {
			t.Errorf("pass fields %q and %q, want two distinct IDs", j[0].Pass, j[1].Pass)
		}
	})
	t.Run("the journal's pass is the report's PassID: run, then the number", func(t *testing.T) {
		for i, r := range reports {
			if string(j[i].Pass) != r.PassID() || !strings.HasPrefix(r.PassID(), r.Run+"/") || !strings.HasSuffix(r.PassID(), "/1") {
				t.Errorf("journal pass %q, report PassID %q, run %q", j[i].Pass, r.PassID(), r.Run)
			}
			if !strings.HasPrefix(r.Run, execNow.UTC().Format("20060102T150405Z")+"-") {
				t.Errorf("run %q does not start with the engine's start time", r.Run)
			}
		}
	})
	t.Run("a dry run has no pass ID", func(t *testing.T) {
		if id := DryRunReport(Plan{}).PassID(); id != "" {
			t.Errorf("dry run PassID %q, want empty", id)
		}
	})
}

func TestJournalPassReadsOldNumbers(t *testing.T) {
	tests := []struct {
		name string
		line string
		want JournalPass
	}{
		{name: "a pass ID string reads as itself", line: `{"pass":"20260102T150405Z-0a1b2c3d/4"}`, want: "20260102T150405Z-0a1b2c3d/4"},
		{name: "an old journal's number reads as its decimal string", line: `{"pass":1}`, want: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e JournalEntry
			if err := json.Unmarshal([]byte(tt.line), &e); err != nil {
				t.Fatal(err)
			}
			if e.Pass != tt.want {
				t.Errorf("pass %q, want %q", e.Pass, tt.want)
			}
		})
	}
	t.Run("anything else is an error naming the field", func(t *testing.T) {
		var e JournalEntry
		err := json.Unmarshal([]byte(`{"pass":true}`), &e)
		if err == nil || !strings.Contains(err.Error(), "pass:") {
			t.Errorf("err = %v, want one naming pass", err)
		}
	})
}

// TestRunNamedByStarted: Options.Started names the run when the clock
// reads another time at New (the demo's warm-up clock, issue 41).
func TestRunNamedByStarted(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10}
	launch := execNow.Add(5 * time.Minute)
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: t.TempDir(),
		Now: func() time.Time { return execNow }, Started: launch})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{
		Remove: []ImageRemoval{{ID: "i1", SizeBytes: 10, Reason: RemoveForAge}}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := launch.UTC().Format("20060102T150405Z") + "-"; !strings.HasPrefix(r.Run, want) {
		t.Errorf("run %q, want it named by Started (%s…)", r.Run, want)
	}
}

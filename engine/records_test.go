package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/nodegc/nodegc/engine/state"
)

func TestRecordsSurviveARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	rt := newFakeRuntime()
	rt.Images["old"] = Image{ID: "old", SizeBytes: 1}
	rt.Images["used"] = Image{ID: "used", SizeBytes: 1}
	rt.Containers["c"] = Container{ID: "c", ImageID: "used", State: ContainerExited}
	now := execNow
	clock := func() time.Time { return now }
	e1, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e1.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	e1.Close()
	// An hour later, a new process over the same state dir.
	now = execNow.Add(time.Hour)
	rt.Images["new"] = Image{ID: "new", SizeBytes: 1}
	delete(rt.Containers, "c")
	e2, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	s, err := e2.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ImageRecord{}
	for _, r := range s.ImageRecords {
		got[r.ID] = r
	}
	if !got["old"].FirstDetected.Equal(execNow) || got["old"].LastUsed != nil {
		t.Errorf("old = %+v, want first detected at the first run and never used", got["old"])
	}
	if !got["used"].FirstDetected.Equal(execNow) || got["used"].LastUsed == nil || !got["used"].LastUsed.Equal(execNow) {
		t.Errorf("used = %+v, want last used at the first run", got["used"])
	}
	if !got["new"].FirstDetected.Equal(now) {
		t.Errorf("new = %+v, want first detected now", got["new"])
	}
	for _, f := range []string{dir, filepath.Join(dir, state.RecordsFile)} {
		fi, err := os.Stat(f)
		want := os.FileMode(0o600)
		if f == dir {
			want = 0o700
		}
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s mode %v (%v), want %v", f, fi.Mode().Perm(), err, want)
		}
	}
}

func TestRecordsOfVanishedImagesAreDropped(t *testing.T) {
	recs, changed := state.UpdateRecords(map[string]ImageRecord{"gone": {ID: "gone", FirstDetected: execNow}}, []Image{{ID: "here"}}, nil, execNow, time.Time{})
	if _, ok := recs["gone"]; ok || len(recs) != 1 || !changed {
		t.Errorf("records = %v, want only 'here'", recs)
	}
}

func TestCorruptRecordsAreMovedAsideAndTheEngineStartsFresh(t *testing.T) {
	for name, content := range map[string]string{
		"truncated JSON":     `{"apiVersion":"nodegc/v1","kind":"ImageRecords","records":[{"id":"a","firstDe`,
		"wrong kind":         `{"kind":"Something","records":[]}`,
		"record without id":  `{"kind":"ImageRecords","records":[{"firstDetected":"2026-01-01T00:00:00Z"}]}`,
		"not JSON at all":    "\x00\x01garbage",
		"wrong type of date": `{"kind":"ImageRecords","records":[{"id":"a","firstDetected":12}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, state.RecordsFile)
			os.WriteFile(path, []byte(content), 0o600)
			rt := newFakeRuntime()
			e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: func() time.Time { return execNow }})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Warning() == nil || !strings.Contains(e.Warning().Error(), "corrupt") {
				t.Errorf("warning = %v, want a corrupt-records warning", e.Warning())
			}
			aside := path + ".corrupt-" + "1793534400"
			if b, err := os.ReadFile(aside); err != nil || string(b) != content {
				t.Errorf("corrupt file not kept aside at %s: %v", aside, err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("corrupt file still in place: %v", err)
			}
			if !e.fresh || len(e.records) != 0 {
				t.Errorf("engine did not start fresh")
			}
		})
	}
}

func TestSaveRecordsLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	recs := map[string]ImageRecord{"a": {ID: "a", FirstDetected: execNow}}
	for range 3 {
		if err := state.SaveRecords(dir, recs, execNow); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != state.RecordsFile {
		t.Errorf("state dir holds %v, want only %s", ents, state.RecordsFile)
	}
	got, found, warn, err := state.LoadRecords(dir, execNow, true)
	if err != nil || warn != nil || !found || !got["a"].FirstDetected.Equal(execNow) {
		t.Errorf("load = %v %v %v %v", got, found, warn, err)
	}
}

// The records are written when an image comes or goes, or starts or
// stops being in use, and the last-used times of the images in use once
// they are state.RecordsMaxStale old; a plan or snapshot of an unchanged node
// writes nothing before that.
func TestRecordsArePersistedWhenTheyChange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, state.RecordsFile)
	rt := newFakeRuntime()
	rt.Images["a"] = Image{ID: "a"}
	now := execNow
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: dir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	read := func() string { b, _ := os.ReadFile(path); return string(b) }
	lastUsed := func() *time.Time {
		recs, _, _, _ := state.LoadRecords(dir, now, true)
		return recs["a"].LastUsed
	}

	e.Snapshot(ctx)
	if !strings.Contains(read(), `"a"`) {
		t.Fatalf("a new image was not persisted by a snapshot: %s", read())
	}
	// A container now uses "a": the next snapshot persists its use.
	rt.Containers["c"] = Container{ID: "c", ImageID: "a", State: ContainerRunning}
	now = now.Add(time.Minute)
	e.Snapshot(ctx)
	if lu := lastUsed(); lu == nil || !lu.Equal(now) {
		t.Errorf("an image that came into use was not persisted: %v", lu)
	}
	// Still in use, a minute on: neither a snapshot nor a plan rewrites.
	before := read()
	now = now.Add(time.Minute)
	e.Snapshot(ctx)
	if _, err := e.Plan(ctx, PassImages); err != nil {
		t.Fatal(err)
	}
	if read() != before {
		t.Errorf("a snapshot and a plan of an unchanged node rewrote the records")
	}
	// state.RecordsMaxStale after the write, the last use is written again.
	now = execNow.Add(time.Minute + state.RecordsMaxStale)
	e.Snapshot(ctx)
	if lu := lastUsed(); lu == nil || !lu.Equal(now) {
		t.Errorf("a last use %v old was not persisted: %v", state.RecordsMaxStale, lu)
	}
	// No longer in use: its last use stays, and is persisted at once.
	delete(rt.Containers, "c")
	used := now
	now = now.Add(time.Minute)
	before = read()
	e.Snapshot(ctx)
	if lu := lastUsed(); read() == before || lu == nil || !lu.Equal(used) {
		t.Errorf("an image that went out of use: last used %v persisted (rewritten %v), want %v", lu, read() != before, used)
	}
	// A vanished image is persisted by the next snapshot.
	delete(rt.Images, "a")
	e.Snapshot(ctx)
	if strings.Contains(read(), `"a"`) {
		t.Errorf("a vanished image is still persisted: %s", read())
	}
}

func TestRecordTimesAfterNowAreClamped(t *testing.T) {
	ahead := execNow.Add(365 * 24 * time.Hour)
	past := execNow.Add(-time.Hour)
	tests := []struct {
		name          string
		rec           ImageRecord
		wantFirst     time.Time
		wantLastUsed  *time.Time
		wantRewritten bool
	}{
		{"a first-detected time a year ahead is now", ImageRecord{ID: "a", FirstDetected: ahead}, execNow, nil, true},
		{"a last-used time a year ahead is now", ImageRecord{ID: "a", FirstDetected: past, LastUsed: &ahead}, past, &execNow, true},
		{"times in the past are kept", ImageRecord{ID: "a", FirstDetected: past, LastUsed: &past}, past, &past, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, r ImageRecord) {
				t.Helper()
				if !r.FirstDetected.Equal(tc.wantFirst) || (r.LastUsed == nil) != (tc.wantLastUsed == nil) || r.LastUsed != nil && !r.LastUsed.Equal(*tc.wantLastUsed) {
					t.Errorf("%s: %+v, want first detected %v, last used %v", how, r, tc.wantFirst, tc.wantLastUsed)
				}
			}
			dir := t.TempDir()
			if err := state.SaveRecords(dir, map[string]ImageRecord{"a": tc.rec}, ahead); err != nil {
				t.Fatal(err)
			}
			recs, _, _, err := state.LoadRecords(dir, execNow, true)
			if err != nil {
				t.Fatal(err)
			}
			check("loaded", recs["a"])
			// On use: records already in memory when the clock steps back.
			next, changed := state.UpdateRecords(map[string]ImageRecord{"a": tc.rec}, []Image{{ID: "a"}}, nil, execNow, time.Time{})
			check("updated", next["a"])
			if changed != tc.wantRewritten {
				t.Errorf("changed = %v, want %v (a clamped record is persisted again)", changed, tc.wantRewritten)
			}
		})
	}
}

// TestUpdateRecordsPinNoListing pins that the records hold none of a
// listing's memory: a listing that reads as the last one is dropped at
// once (the dashboard's safety net keeps what it shows), and a record
// keyed by its ID string held the span that string was decoded in.
func TestUpdateRecordsPinNoListing(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	listing := func() []Image {
		// Each listing decodes its own strings.
		return []Image{{ID: strings.Clone("sha256:aa")}, {ID: strings.Clone("sha256:bb")}, {ID: strings.Clone("sha256:cc")}}
	}
	first := listing()
	recs, _ := state.UpdateRecords(nil, first, map[string]bool{"sha256:aa": true, "sha256:bb": true}, now, time.Time{})
	held := map[string]*byte{}
	for id, r := range recs {
		held[id] = unsafe.StringData(r.ID)
	}
	second := listing()
	second = append(second, Image{ID: strings.Clone("sha256:dd")})
	next, _ := state.UpdateRecords(recs, second, map[string]bool{"sha256:aa": true, "sha256:bb": true, "sha256:dd": true}, now.Add(time.Minute), now)
	var used *time.Time
	for id, r := range next {
		if id != r.ID || unsafe.StringData(id) != unsafe.StringData(r.ID) {
			t.Errorf("%s: the key and the record's ID are different strings", id)
		}
		if p, ok := held[id]; ok && unsafe.StringData(r.ID) != p {
			t.Errorf("%s: the record took the new listing's ID string; want the one it held", id)
		}
		if r.LastUsed != nil {
			if used != nil && r.LastUsed != used {
				t.Errorf("%s: a last-used time of its own; want the listing's one", id)
			}
			used = r.LastUsed
		}
	}
	if used == nil || !used.Equal(now.Add(time.Minute)) {
		t.Errorf("last used %v; want the second listing's time", used)
	}
}

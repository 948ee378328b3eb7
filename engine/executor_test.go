package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/state"
)

var execNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// newTestEngine returns an engine over rt with a fixed clock and state in a
// temp dir.
func newTestEngine(t *testing.T, rt *fakeRuntime, readOnly bool) *Engine {
	t.Helper()
	o := Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: t.TempDir(), Now: func() time.Time { return execNow }, Parallel: 1}
	if readOnly {
		o.Remover = nil
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// outcomes maps item ID to outcome.
func outcomes(r PassReport) map[string]Outcome {
	out := map[string]Outcome{}
	for _, it := range r.Items {
		out[it.ID] = it.Outcome
	}
	return out
}

func TestApplyRechecksEachItem(t *testing.T) {
	cases := []struct {
		name  string
		setup func(rt *fakeRuntime)
		plan  Plan
		want  map[string]Outcome
		// removed lists the mutating calls the runtime must have seen.
		removed []string
	}{
		{
			name:    "an unused image is removed",
			setup:   func(rt *fakeRuntime) { rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10} },
			plan:    Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", SizeBytes: 10, Reason: RemoveForSpace}}}},
			want:    map[string]Outcome{"i1": OutcomeRemoved},
			removed: []string{"RemoveImage i1"},
		},
		{
			name: "an image a container started on since planning is kept",
			setup: func(rt *fakeRuntime) {
				rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10}
				rt.Containers["c1"] = Container{ID: "c1", ImageID: "i1", State: ContainerRunning}
			},
			plan: Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", SizeBytes: 10, Reason: RemoveForSpace}}}},
			want: map[string]Outcome{"i1": OutcomeSkipped},
		},
		{
			name: "an image used only by an exited container is kept",
			setup: func(rt *fakeRuntime) {
				rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10}
				rt.Containers["c1"] = Container{ID: "c1", ImageRef: "i1", State: ContainerExited}
			},
			plan: Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}},
			want: map[string]Outcome{"i1": OutcomeSkipped},
		},
		{
			name:  "an image pinned since planning is kept",
			setup: func(rt *fakeRuntime) { rt.Images["i1"] = Image{ID: "i1", Pinned: true} },
			plan:  Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}},
			want:  map[string]Outcome{"i1": OutcomeSkipped},
		},
		{
			name: "the sandbox image is kept even unpinned",
			setup: func(rt *fakeRuntime) {
				rt.Images["i1"] = Image{ID: "i1", RepoTags: []string{"registry.k8s.io/pause:3.9"}}
				rt.RuntimeInfo.SandboxImages = []string{"registry.k8s.io/pause:3.9"}
			},
			plan: Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}},
			want: map[string]Outcome{"i1": OutcomeSkipped},
		},
		{
			name: "no image is removed when the sandbox images cannot be read",
			setup: func(rt *fakeRuntime) {
				rt.Images["i1"] = Image{ID: "i1"}
				rt.Fail["Info *"] = errors.New("status failed")
			},
			plan: Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}},
			want: map[string]Outcome{"i1": OutcomeFailed},
		},
		{
			name:  "an image deleted behind our back is already gone",
			setup: func(rt *fakeRuntime) {},
			plan:  Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}},
			want:  map[string]Outcome{"i1": OutcomeGone},
		},
		{
			name: "a removal error is recorded and the pass goes on",
			setup: func(rt *fakeRuntime) {
				rt.Images["i1"] = Image{ID: "i1", SizeBytes: 10}
				rt.Images["i2"] = Image{ID: "i2", SizeBytes: 20}
				rt.Fail["RemoveImage i1"] = errors.New("disk on fire")
			},
			plan: Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}, {ID: "i2", Reason: RemoveForSpace}}}},
			want: map[string]Outcome{"i1": OutcomeFailed, "i2": OutcomeRemoved},
			// The failed call is still a call.
			removed: []string{"RemoveImage i1", "RemoveImage i2"},
		},
		{
			name: "NotFound on removal means already gone",
			setup: func(rt *fakeRuntime) {
				rt.Images["i1"] = Image{ID: "i1"}
				rt.Fail["RemoveImage i1"] = ErrNotFound
			},
			plan:    Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}},
			want:    map[string]Outcome{"i1": OutcomeGone},
			removed: []string{"RemoveImage i1"},
		},
		{
			name:  "a container running again is kept",
			setup: func(rt *fakeRuntime) { rt.Containers["c1"] = Container{ID: "c1", State: ContainerRunning} },
			plan:  Plan{ContainerGC: ContainerPlan{Remove: []ContainerRemoval{{ID: "c1", Reason: RemovePerContainerLimit}}}},
			want:  map[string]Outcome{"c1": OutcomeSkipped},
		},
		{
			name:    "an UNKNOWN container is stopped before it is removed",
			setup:   func(rt *fakeRuntime) { rt.Containers["c1"] = Container{ID: "c1", State: ContainerUnknown} },
			plan:    Plan{ContainerGC: ContainerPlan{Remove: []ContainerRemoval{{ID: "c1", Reason: RemovePerContainerLimit, State: ContainerUnknown}}}},
			want:    map[string]Outcome{"c1": OutcomeRemoved},
			removed: []string{"StopContainer c1", "RemoveContainer c1"},
		},
		{
			name: "an UNKNOWN container that will not stop is not removed",
			setup: func(rt *fakeRuntime) {
				rt.Containers["c1"] = Container{ID: "c1", State: ContainerUnknown}
				rt.Fail["StopContainer c1"] = errors.New("shim gone")
			},
			plan:    Plan{ContainerGC: ContainerPlan{Remove: []ContainerRemoval{{ID: "c1", Reason: RemovePerContainerLimit}}}},
			want:    map[string]Outcome{"c1": OutcomeFailed},
			removed: []string{"StopContainer c1"},
		},
		{
			name:    "a not-ready sandbox is stopped, then removed",
			setup:   func(rt *fakeRuntime) { rt.Sandboxes["s1"] = Sandbox{ID: "s1", State: SandboxNotReady} },
			plan:    Plan{SandboxGC: SandboxPlan{Remove: []SandboxRemoval{{ID: "s1", Reason: SandboxSuperseded}}}},
			want:    map[string]Outcome{"s1": OutcomeRemoved},
			removed: []string{"StopSandbox s1", "RemoveSandbox s1"},
		},
		{
			name: "a sandbox that will not stop is not removed",
			setup: func(rt *fakeRuntime) {
				rt.Sandboxes["s1"] = Sandbox{ID: "s1", State: SandboxNotReady}
				rt.Fail["StopSandbox s1"] = errors.New("network teardown failed")
			},
			plan:    Plan{SandboxGC: SandboxPlan{Remove: []SandboxRemoval{{ID: "s1", Reason: SandboxSuperseded}}}},
			want:    map[string]Outcome{"s1": OutcomeFailed},
			removed: []string{"StopSandbox s1"},
		},
		{
			name:  "a sandbox ready again is kept",
			setup: func(rt *fakeRuntime) { rt.Sandboxes["s1"] = Sandbox{ID: "s1", State: SandboxReady} },
			plan:  Plan{SandboxGC: SandboxPlan{Remove: []SandboxRemoval{{ID: "s1", Reason: SandboxSuperseded}}}},
			want:  map[string]Outcome{"s1": OutcomeSkipped},
		},
		{
			name: "a sandbox that gained a container is kept",
			setup: func(rt *fakeRuntime) {
				rt.Sandboxes["s1"] = Sandbox{ID: "s1", State: SandboxNotReady}
				rt.Containers["c9"] = Container{ID: "c9", PodSandboxID: "s1", State: ContainerCreated}
			},
			plan: Plan{SandboxGC: SandboxPlan{Remove: []SandboxRemoval{{ID: "s1", Reason: SandboxSuperseded}}}},
			want: map[string]Outcome{"s1": OutcomeSkipped},
		},
		{
			name: "containers go before the sandbox that held them",
			setup: func(rt *fakeRuntime) {
				rt.Sandboxes["s1"] = Sandbox{ID: "s1", State: SandboxNotReady}
				rt.Containers["c1"] = Container{ID: "c1", PodSandboxID: "s1", State: ContainerExited}
			},
			plan: Plan{
				ContainerGC: ContainerPlan{Remove: []ContainerRemoval{{ID: "c1", Reason: RemovePodRemovable}}},
				SandboxGC:   SandboxPlan{Remove: []SandboxRemoval{{ID: "s1", Reason: SandboxPodRemovable}}},
			},
			want:    map[string]Outcome{"c1": OutcomeRemoved, "s1": OutcomeRemoved},
			removed: []string{"RemoveContainer c1", "StopSandbox s1", "RemoveSandbox s1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime()
			tc.setup(rt)
			e := newTestEngine(t, rt, false)
			tc.plan.EvaluatedAt = execNow
			r, err := e.Apply(context.Background(), tc.plan)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(r); !mapsEqual(got, tc.want) {
				t.Errorf("outcomes = %v, want %v (items %+v)", got, tc.want, r.Items)
			}
			if got := rt.MutatingCalls(); !slices.Equal(got, tc.removed) {
				t.Errorf("mutating calls = %v, want %v", got, tc.removed)
			}
		})
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestApplyMeasuresAndJournals(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["i1"] = Image{ID: "i1", SizeBytes: 30, RepoTags: []string{"a:1"}, RepoDigests: []string{"a@sha256:1"}}
	rt.Images["i2"] = Image{ID: "i2", SizeBytes: 50, RepoTags: []string{"b:1"}}
	e := newTestEngine(t, rt, false)
	plan := Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Triggered: true, BytesToFree: 60, Remove: []ImageRemoval{
		{ID: "i1", SizeBytes: 30, Reason: RemoveForSpace}, {ID: "i2", SizeBytes: 50, Reason: RemoveForSpace}}}}
	r, err := e.Apply(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if r.EstimatedBytesFreed != 80 {
		t.Errorf("estimated = %d, want 80", r.EstimatedBytesFreed)
	}
	if r.MeasuredBytesFreed == nil || *r.MeasuredBytesFreed != 80 {
		t.Errorf("measured = %v, want 80", r.MeasuredBytesFreed)
	}
	if hasEvent(r.Events, EventFreeDiskSpaceFailed) {
		t.Errorf("unexpected FreeDiskSpaceFailed: %+v", r.Events)
	}
	j, err := ReadJournal(e.o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 2 || j[0].ID != "i1" || j[1].ID != "i2" || j[0].RepoTags[0] != "a:1" || j[0].RepoDigests[0] != "a@sha256:1" || j[0].SizeBytes != 30 || j[0].Reason != "space" || string(j[0].Pass) != r.PassID() || j[0].Kind != ItemImage {
		t.Errorf("journal = %+v", j)
	}
	fi, err := os.Stat(filepath.Join(e.o.StateDir, state.JournalFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode = %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestApplyFreeDiskSpaceFailed: in the kubelet (image_gc_manager.go
// v1.36), freeSpace returns its deletion errors and GarbageCollect returns
// them before it would record FreeDiskSpaceFailed; images it does not
// remove for other reasons just do not count, and the event follows.
func TestApplyFreeDiskSpaceFailed(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(rt *fakeRuntime)
		wantEvent bool
		wantOK    bool
	}{
		{
			name:      "a failed removal fails the pass without FreeDiskSpaceFailed",
			setup:     func(rt *fakeRuntime) { rt.Fail["RemoveImage i1"] = errors.New("boom") },
			wantEvent: false,
			wantOK:    false,
		},
		{
			name:      "a removal skipped at the re-check leaves too little freed: FreeDiskSpaceFailed",
			setup:     func(rt *fakeRuntime) { rt.Images["i1"] = Image{ID: "i1", SizeBytes: 30, Pinned: true} },
			wantEvent: true,
			wantOK:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.Images["i1"] = Image{ID: "i1", SizeBytes: 30}
			tt.setup(rt)
			e := newTestEngine(t, rt, false)
			r, _ := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Triggered: true, BytesToFree: 10,
				Remove: []ImageRemoval{{ID: "i1", SizeBytes: 30, Reason: RemoveForSpace}}}})
			if hasEvent(r.Events, EventFreeDiskSpaceFailed) != tt.wantEvent || r.OK() != tt.wantOK {
				t.Errorf("events %+v, ok %v: want FreeDiskSpaceFailed %v, ok %v", r.Events, r.OK(), tt.wantEvent, tt.wantOK)
			}
		})
	}
	t.Run("a predicted FreeDiskSpaceFailed is dropped when a removal fails", func(t *testing.T) {
		rt := newFakeRuntime()
		rt.Images["i1"] = Image{ID: "i1", SizeBytes: 30}
		rt.Fail["RemoveImage i1"] = errors.New("boom")
		e := newTestEngine(t, rt, false)
		r, _ := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Triggered: true, BytesToFree: 100,
			Remove: []ImageRemoval{{ID: "i1", SizeBytes: 30, Reason: RemoveForSpace}},
			Events: []Event{{Reason: EventFreeDiskSpaceFailed, Warning: true, Message: "predicted"}}}})
		if hasEvent(r.Events, EventFreeDiskSpaceFailed) {
			t.Errorf("events %+v: want no FreeDiskSpaceFailed after a failed removal", r.Events)
		}
	})
}

func TestReadOnlyEngineRefusesToApply(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["i1"] = Image{ID: "i1"}
	e := newTestEngine(t, rt, true)
	if _, err := e.Apply(context.Background(), Plan{ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1"}}}}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Apply err = %v, want ErrReadOnly", err)
	}
	if _, err := e.Run(context.Background(), PassFull); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Run err = %v, want ErrReadOnly", err)
	}
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Errorf("mutating calls %v", got)
	}
}

func TestApplyLogPaths(t *testing.T) {
	root := t.TempDir()
	pods := filepath.Join(root, "pods")
	links := filepath.Join(root, "containers")
	for _, d := range []string{filepath.Join(pods, "ns_gone_uid1"), filepath.Join(pods, "ns_back_uid2"), links, filepath.Join(root, "victim")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("/nowhere", filepath.Join(links, "p_ns_c-dead1.log"))
	os.Symlink("/nowhere", filepath.Join(links, "p_ns_c-live1.log"))
	os.WriteFile(filepath.Join(root, "kept.log"), []byte("log"), 0o644)
	os.Symlink(filepath.Join(root, "kept.log"), filepath.Join(links, "p_ns_c-dead2.log"))
	// A symlinked subdirectory of the links dir that leads elsewhere, with
	// a dangling link in it (issue 8 item 11).
	os.MkdirAll(filepath.Join(root, "elsewhere"), 0o755)
	os.Symlink("/nowhere", filepath.Join(root, "elsewhere", "p_ns_c-dead3.log"))
	os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(links, "sub"))
	os.Symlink(filepath.Join(root, "elsewhere"), filepath.Join(pods, "nested"))
	os.MkdirAll(filepath.Join(root, "elsewhere", "ns_x_uid1"), 0o755)
	rt := newFakeRuntime()
	rt.Containers["live1"] = Container{ID: "live1", State: ContainerRunning}
	rt.Containers["c2"] = Container{ID: "c2", PodUID: "uid2", State: ContainerRunning}
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: func() Policy { p := DefaultPolicy(); p.PodLogsDir = pods; return p }(),
		ContainerLogsDir: links, Now: func() time.Time { return execNow }})
	if err != nil {
		t.Fatal(err)
	}
	plan := Plan{EvaluatedAt: execNow, LogGC: LogPlan{Remove: []LogRemoval{
		{Path: filepath.Join(links, "sub", "p_ns_c-dead3.log"), Reason: LogDangling},
		{Path: filepath.Join(pods, "nested", "ns_x_uid1"), Reason: LogPodRemovable},
		{Path: filepath.Join(pods, "ns_gone_uid1"), Reason: LogPodRemovable},
		{Path: filepath.Join(pods, "ns_back_uid2"), Reason: LogPodRemovable},
		{Path: filepath.Join(links, "p_ns_c-dead1.log"), Reason: LogDangling},
		{Path: filepath.Join(links, "p_ns_c-live1.log"), Reason: LogDangling},
		{Path: filepath.Join(links, "p_ns_c-dead2.log"), Reason: LogDangling},
		{Path: "victim", Reason: LogDangling},
		{Path: pods + "/../victim", Reason: LogPodRemovable},
		{Path: pods, Reason: LogPodRemovable},
		{Path: "", Reason: LogDangling},
	}}}
	r, _ := e.Apply(context.Background(), plan)
	want := map[string]Outcome{
		filepath.Join(links, "sub", "p_ns_c-dead3.log"): OutcomeSkipped,
		filepath.Join(pods, "nested", "ns_x_uid1"):      OutcomeSkipped,
		filepath.Join(pods, "ns_gone_uid1"):             OutcomeRemoved,
		filepath.Join(pods, "ns_back_uid2"):             OutcomeSkipped,
		filepath.Join(links, "p_ns_c-dead1.log"):        OutcomeRemoved,
		filepath.Join(links, "p_ns_c-live1.log"):        OutcomeSkipped,
		filepath.Join(links, "p_ns_c-dead2.log"):        OutcomeSkipped,
		"victim":                                        OutcomeSkipped,
		pods + "/../victim":                             OutcomeSkipped,
		pods:                                            OutcomeSkipped,
		"":                                              OutcomeSkipped,
	}
	if got := outcomes(r); !mapsEqual(got, want) {
		t.Errorf("outcomes = %v\nwant %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, "victim")); err != nil {
		t.Errorf("a path outside the log dirs was touched: %v", err)
	}
	for _, p := range []string{"p_ns_c-dead3.log", "ns_x_uid1"} {
		if _, err := os.Lstat(filepath.Join(root, "elsewhere", p)); err != nil {
			t.Errorf("a path reached through a symlinked subdirectory was removed: %v", err)
		}
	}
	if _, err := os.Stat(pods); err != nil {
		t.Errorf("the pod logs dir itself was removed: %v", err)
	}
}

func TestWithinDir(t *testing.T) {
	cases := []struct {
		dir, path string
		want      bool
	}{
		{"/var/log/pods", "/var/log/pods/ns_p_uid", true},
		{"/var/log/pods", "/var/log/pods/ns_p_uid/c/0.log", true},
		{"/var/log/pods", "/var/log/pods", false},
		{"/var/log/pods", "/var/log/pods/", false},
		{"/var/log/pods", "/var/log/pods/../../etc", false},
		{"/var/log/pods", "/var/log/podsevil/x", false},
		{"/var/log/pods", "ns_p_uid", false},
		{"/var/log/pods", "", false},
		{"/var/log/pods", ".", false},
		{"relative", "relative/x", false},
	}
	for _, tc := range cases {
		if got := WithinDir(tc.dir, tc.path); got != tc.want {
			t.Errorf("WithinDir(%q, %q) = %v, want %v", tc.dir, tc.path, got, tc.want)
		}
	}
}

func TestRunCollectsLogsOfRemovablePodsAndDanglingLinks(t *testing.T) {
	root := t.TempDir()
	pods, links := filepath.Join(root, "pods"), filepath.Join(root, "containers")
	for _, d := range []string{filepath.Join(pods, "ns_gone_uid1"), filepath.Join(pods, "ns_live_uid2"), links} {
		os.MkdirAll(d, 0o755)
	}
	os.Symlink("/nowhere", filepath.Join(links, "gone_ns_app-deadbeef.log"))
	os.Symlink("/nowhere", filepath.Join(links, "live_ns_app-c2.log"))
	rt := newFakeRuntime()
	rt.Sandboxes["s2"] = Sandbox{ID: "s2", PodUID: "uid2", State: SandboxReady}
	rt.Containers["c2"] = Container{ID: "c2", PodSandboxID: "s2", PodUID: "uid2", Name: "app", State: ContainerRunning}
	p := DefaultPolicy()
	p.PodLogsDir = pods
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: p, ScanLogs: true, ContainerLogsDir: links, Now: func() time.Time { return execNow },
		PodSource: func(context.Context, Snapshot) (PodSource, error) {
			return PodSource{Ready: true, RemovablePodUIDs: []string{"uid1"}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Run(context.Background(), PassContainers)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{
		filepath.Join(pods, "ns_gone_uid1"):              OutcomeRemoved,
		filepath.Join(links, "gone_ns_app-deadbeef.log"): OutcomeRemoved,
	}
	if got := outcomes(r); !mapsEqual(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	for _, keep := range []string{filepath.Join(pods, "ns_live_uid2"), filepath.Join(links, "live_ns_app-c2.log")} {
		if _, err := os.Lstat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
}

func TestNoFreeDiskSpaceFailedWhenTheAgePassAloneSufficed(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["idle"] = Image{ID: "idle", SizeBytes: 20}
	e := newTestEngine(t, rt, false)
	// Usage 86% ≥ 85%, 60 bytes to free; the MaxAge pass removes 20 and
	// brings usage under the high threshold, so no space pass runs.
	r, _ := e.Apply(context.Background(), Plan{EvaluatedAt: execNow, Pass: PassImages, ImageGC: ImagePlan{Triggered: true, BytesToFree: 60,
		Remove: []ImageRemoval{{ID: "idle", SizeBytes: 20, Reason: RemoveForAge}}}})
	if hasEvent(r.Events, EventFreeDiskSpaceFailed) || !r.OK() {
		t.Errorf("events %+v: want none", r.Events)
	}
}

func TestApplyRefusesAStalePlan(t *testing.T) {
	rt := newFakeRuntime()
	rt.Images["i1"] = Image{ID: "i1"}
	e := newTestEngine(t, rt, false)
	plan := Plan{EvaluatedAt: execNow.Add(-MaxPlanAge - time.Second), ImageGC: ImagePlan{Remove: []ImageRemoval{{ID: "i1", Reason: RemoveForSpace}}}}
	if _, err := e.Apply(context.Background(), plan); !errors.Is(err, ErrStalePlan) {
		t.Errorf("err = %v, want ErrStalePlan", err)
	}
	plan.EvaluatedAt = execNow.Add(-MaxPlanAge)
	if r, err := e.Apply(context.Background(), plan); err != nil || r.Count(OutcomeRemoved) != 1 {
		t.Errorf("a plan exactly MaxPlanAge old: %v, %+v", err, r.Items)
	}
	if got := rt.MutatingCalls(); len(got) != 1 {
		t.Errorf("mutating calls %v", got)
	}
}

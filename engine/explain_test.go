package engine

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestExplainAgreesWithTheDryRun checks that the rows a view renders
// (PlanSnapshot, then ExplainImages) remove exactly what a dry-run of the
// same engine removes, MaxAge included: after a fresh start the engine
// holds the MaxAge pass back (it cannot know how long an image was idle
// before it started), and the rows must too.
func TestExplainAgreesWithTheDryRun(t *testing.T) {
	const maxAge = time.Hour
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// at is when the plan and the dry-run are made, after start.
		at time.Duration
		// wantAge is the images the MaxAge pass removes.
		wantAge []string
	}{
		{name: "a fresh start within MaxAge holds the age pass back", at: 30 * time.Minute, wantAge: nil},
		{name: "a fresh start past MaxAge runs the age pass", at: 2 * time.Hour, wantAge: []string{"idle1", "idle2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			rt := newFakeRuntime()
			rt.Fs = FsStats{Mountpoint: "/fake", CapacityBytes: 1000, AvailableBytes: 900} // 10%: no space pass
			rt.Images["idle1"] = Image{ID: "idle1", SizeBytes: 10}
			rt.Images["idle2"] = Image{ID: "idle2", SizeBytes: 20}
			rt.Images["used"] = Image{ID: "used", SizeBytes: 30}
			rt.Containers["c1"] = Container{ID: "c1", ImageID: "used", State: ContainerRunning}
			now := start
			pol := DefaultPolicy()
			pol.Image.MaxAge = maxAge
			e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Policy: pol, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			// The images were first seen 3h before the plan: idle for
			// longer than MaxAge by the records.
			now = start.Add(tt.at - 3*time.Hour)
			if _, err := e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			now = start.Add(tt.at)

			s, err := e.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.PlanSnapshot(s, PassImages, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			rows, _ := ExplainImages(s, p)
			var shown []string
			for _, r := range rows {
				if r.Action == ActionRemove {
					shown = append(shown, r.Image.ID)
				}
			}
			dry, err := e.DryRun(ctx, PassImages)
			if err != nil {
				t.Fatal(err)
			}
			var planned []string
			for _, it := range dry.Items {
				planned = append(planned, it.ID)
			}
			if !slices.Equal(shown, planned) {
				t.Errorf("rows remove %v, the dry-run %v", shown, planned)
			}
			if !slices.Equal(shown, tt.wantAge) {
				t.Errorf("rows remove %v, want %v", shown, tt.wantAge)
			}
		})
	}
}

func TestExplainImages(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	old := at.Add(-72 * time.Hour)
	base := func() Snapshot {
		return Snapshot{
			TakenAt: at,
			Runtime: RuntimeInfo{SandboxImages: []string{"pause:3.6"}},
			ImageFs: FsStats{CapacityBytes: 1000, AvailableBytes: 100}, // 90%
			Images: []Image{
				{ID: "sha256:pause", RepoTags: []string{"docker.io/library/pause:3.6"}, SizeBytes: 1},
				{ID: "sha256:app", RepoTags: []string{"app:1"}, SizeBytes: 50},
				{ID: "sha256:web", RepoTags: []string{"web:1"}, SizeBytes: 500},
			},
			ImageRecords: []ImageRecord{{ID: "sha256:pause", FirstDetected: old}, {ID: "sha256:app", FirstDetected: old}, {ID: "sha256:web", FirstDetected: old}},
			Sandboxes:    []Sandbox{{ID: "sb1", PodUID: "u1", PodNamespace: "default", PodName: "web", State: SandboxReady}},
			Containers:   []Container{{ID: "c1", PodSandboxID: "sb1", PodUID: "u1", Name: "nginx", ImageRef: "web:1", State: ContainerExited}},
		}
	}
	tests := []struct {
		name    string
		pass    PassKind
		want    []string // "rank id action reason" per row
		cutRow  int
		cutText string
	}{
		{
			name: "a full pass ranks by LRU, names the user by tag and keeps the short-named sandbox image",
			pass: PassFull,
			// Never-used images tie on LRU and go by ID.
			want: []string{"1 sha256:app remove space", "2 sha256:pause keep sandbox-image", "3 sha256:web keep in-use"},
			// app frees 50 B of the 100 B to free: the line falls below it.
			cutRow: 1, cutText: "cut line: removals above free 50 B of 100 B to free",
		},
		{
			name:   "a containers pass still ranks every image and gives the planner's keep reasons",
			pass:   PassContainers,
			want:   []string{"1 sha256:app keep not-needed", "2 sha256:pause keep sandbox-image", "3 sha256:web keep in-use"},
			cutRow: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			p := PlanPass(s, DefaultPolicy(), tt.pass, at)
			rows, cut := ExplainImages(s, p)
			var got []string
			for _, r := range rows {
				got = append(got, strconv.Itoa(r.Rank)+" "+r.Image.ID+" "+string(r.Action)+" "+r.Reason)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rows\n got %q\nwant %q", got, tt.want)
			}
			if cut.Row != tt.cutRow || cut.Text != tt.cutText {
				t.Errorf("cut line %d %q, want %d %q", cut.Row, cut.Text, tt.cutRow, tt.cutText)
			}
			if web := rows[2]; !slices.Equal(web.UsedBy, []string{"default/web/nginx"}) {
				t.Errorf("web used by %q, want default/web/nginx", web.UsedBy)
			}
			if rows[0].SandboxImage || !rows[1].SandboxImage {
				t.Errorf("sandbox image flags %v %v, want false true", rows[0].SandboxImage, rows[1].SandboxImage)
			}
		})
	}
}

func TestExplainImagesOfAPlanWhoseImagesAreGone(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	// A plan made from an earlier listing, explained against a snapshot
	// that lists no image any more (all removed since).
	p := Plan{Pass: PassImages, EvaluatedAt: at, ImageGC: ImagePlan{
		Remove: []ImageRemoval{{ID: "sha256:app", RepoTags: []string{"app:1"}, SizeBytes: 50, Reason: RemoveForSpace}}}}
	rows, _ := ExplainImages(Snapshot{TakenAt: at}, p)
	if len(rows) != 1 || rows[0].Image.ID != "sha256:app" || rows[0].Action != ActionRemove || rows[0].Name != "app:1" {
		t.Errorf("rows %+v: want the plan's removal as the one row", rows)
	}
}

func TestExplainContainersKeepReasons(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	s := Snapshot{
		TakenAt:   at,
		Sandboxes: []Sandbox{{ID: "sb1", PodUID: "u1", PodNamespace: "default", PodName: "web", State: SandboxReady}},
		Containers: []Container{
			{ID: "old", PodSandboxID: "sb1", PodUID: "u1", Name: "app", State: ContainerExited, CreatedAt: at.Add(-2 * time.Hour)},
			{ID: "mid", PodSandboxID: "sb1", PodUID: "u1", Name: "app", State: ContainerExited, CreatedAt: at.Add(-time.Hour)},
			{ID: "new", PodSandboxID: "sb1", PodUID: "u1", Name: "app", State: ContainerExited, CreatedAt: at.Add(-time.Minute)},
			{ID: "odd", PodSandboxID: "sb1", PodUID: "u1", Name: "side", State: "CONTAINER_STATE_7", CreatedAt: at.Add(-time.Hour)},
		},
	}
	pol := DefaultPolicy()
	pol.Container.MinAge = 10 * time.Minute // "new" is too young
	tests := []struct {
		name string
		pass PassKind
		want map[string]string // id -> "action reason"
	}{
		{"a containers pass keeps the newest evictable one, the too young and the undefined state, and says why", PassContainers,
			map[string]string{"new": "keep too-young", "mid": "keep newest", "old": "remove per-container-limit", "odd": "keep active"}},
		{"an images pass keeps every container as not planned", PassImages,
			map[string]string{"new": "keep not-planned", "mid": "keep not-planned", "old": "keep not-planned", "odd": "keep not-planned"}},
	}
	t.Run("with no minimum age, a container created after the evaluation time is too young, as the planner's newestGCTime has it", func(t *testing.T) {
		future := Snapshot{TakenAt: at, Containers: []Container{
			{ID: "later", PodUID: "u2", Name: "app", State: ContainerExited, CreatedAt: at.Add(time.Minute)}}}
		rows := ExplainContainers(future, PlanPass(future, DefaultPolicy(), PassContainers, at))
		if len(rows) != 1 || rows[0].Action != ActionKeep || rows[0].Reason != string(ContainerKeepTooYoung) {
			t.Errorf("rows %+v, want the one container kept too-young", rows)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanPass(s, pol, tt.pass, at)
			got := map[string]string{}
			for _, r := range ExplainContainers(s, p) {
				got[r.ID] = string(r.Action) + " " + r.Reason
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("rows %v, want %v", got, tt.want)
			}
		})
	}
}

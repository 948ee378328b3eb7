package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

const gib = int64(1) << 30

// fixedView is a hand-built plan over a hand-built snapshot, so the table
// test depends on the renderer only, not on the planners.
func fixedView() planView {
	at := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := at.Add(-d); return &t }
	const (
		a = "sha256:aaaa00000000000000000000000000000000000000000000000000000000000a"
		b = "sha256:bbbb00000000000000000000000000000000000000000000000000000000000b"
		c = "sha256:cccc00000000000000000000000000000000000000000000000000000000000c"
		d = "sha256:dddd00000000000000000000000000000000000000000000000000000000000d"
		e = "sha256:eeee00000000000000000000000000000000000000000000000000000000000e"
	)
	s := engine.Snapshot{
		TakenAt: at,
		Runtime: engine.RuntimeInfo{Name: "containerd", Version: "1.7.2", Endpoint: "unix:///run/containerd/containerd.sock"},
		ImageFs: engine.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: 100 * gib, AvailableBytes: 10 * gib},
		Images: []engine.Image{
			{ID: a, RepoTags: []string{"old:1"}, SizeBytes: 3 * gib},
			{ID: b, RepoTags: []string{"web:1", "web:latest"}, SizeBytes: 8 * gib},
			{ID: c, RepoTags: []string{"nginx:1.25"}, SizeBytes: 512 << 20},
			{ID: d, RepoTags: []string{"registry.k8s.io/pause:3.6"}, SizeBytes: 700 << 10},
			{ID: e, RepoDigests: []string{"ghcr.io/acme/new@sha256:1234567890abcdef1234"}, SizeBytes: 100},
		},
		ImageRecords: []engine.ImageRecord{
			{ID: a, FirstDetected: *ago(48 * time.Hour)},
			{ID: b, FirstDetected: *ago(72 * time.Hour), LastUsed: ago(3*time.Hour + 10*time.Minute)},
			{ID: c, FirstDetected: *ago(72 * time.Hour), LastUsed: ago(0)},
			{ID: d, FirstDetected: *ago(72 * time.Hour), LastUsed: ago(0)},
		},
		Sandboxes: []engine.Sandbox{
			{ID: "s1aaaaaaaaaaaaaaaa", PodUID: "u1", PodName: "web", PodNamespace: "default", Attempt: 1, State: engine.SandboxReady},
			{ID: "s0aaaaaaaaaaaaaaaa", PodUID: "u1", PodName: "web", PodNamespace: "default", State: engine.SandboxNotReady},
		},
		Containers: []engine.Container{
			{ID: "c1", PodSandboxID: "s1aaaaaaaaaaaaaaaa", PodUID: "u1", Name: "nginx", Attempt: 2, ImageID: c, State: engine.ContainerRunning, CreatedAt: *ago(time.Hour)},
			{ID: "c2", PodSandboxID: "s1aaaaaaaaaaaaaaaa", PodUID: "u1", Name: "nginx", Attempt: 0, ImageID: c, State: engine.ContainerExited, CreatedAt: *ago(5 * time.Hour)},
			{ID: "c3", PodSandboxID: "s1aaaaaaaaaaaaaaaa", PodUID: "u1", Name: "nginx", Attempt: 1, ImageID: c, State: engine.ContainerExited, CreatedAt: *ago(2 * time.Hour)},
			{ID: "c9", PodUID: "u9", Name: "job", State: engine.ContainerUnknown, CreatedAt: *ago(26 * time.Hour)},
		},
		Logs: &engine.LogFiles{PodLogsDir: "/var/log/pods"},
	}
	eligible := at.Add(2 * time.Minute)
	p := engine.Plan{
		EvaluatedAt: at,
		Pass:        engine.PassFull,
		Policy:      engine.DefaultPolicy(),
		ImageGC: engine.ImagePlan{
			UsagePercent: 90, Triggered: true, BytesToFree: 10 * gib, BytesFreed: 11 * gib,
			Remove: []engine.ImageRemoval{
				{ID: a, SizeBytes: 3 * gib, Reason: engine.RemoveForSpace, Detail: "usage 90% >= high threshold 85%"},
				{ID: b, SizeBytes: 8 * gib, Reason: engine.RemoveForSpace, Detail: "usage 90% >= high threshold 85%"},
			},
			Keep: []engine.ImageKeep{
				{ID: e, Reason: engine.KeepTooYoung, Detail: "eligible in 2m0s", EligibleAt: &eligible},
				{ID: c, Reason: engine.KeepInUse, Detail: "in use by default/web/nginx (running) and 2 more"},
				{ID: d, Reason: engine.KeepSandboxImage, Detail: engine.DetailSandboxImageUnpinned},
			},
			Order:   []string{a, e, b, c, d},
			CutLine: 3,
		},
		ContainerGC: engine.ContainerPlan{Remove: []engine.ContainerRemoval{
			{ID: "c9", PodUID: "u9", Name: "job", Reason: engine.RemoveNodeLimit, State: engine.ContainerUnknown, Detail: "node limit"},
			{ID: "c2", PodUID: "u1", Name: "nginx", Reason: engine.RemovePerContainerLimit, Detail: "each container keeps its newest 1 dead"},
		}},
		SandboxGC: engine.SandboxPlan{Remove: []engine.SandboxRemoval{
			{ID: "s0aaaaaaaaaaaaaaaa", PodUID: "u1", Reason: engine.SandboxSuperseded, State: engine.SandboxNotReady},
		}},
		LogGC: engine.LogPlan{Remove: []engine.LogRemoval{
			{Path: "/var/log/containers/web_default_nginx-c0.log", Reason: engine.LogDangling},
		}},
		DiskReserve: engine.DiskReserve{
			ThresholdMiB: 256,
			ImageFs:      engine.FsReserve{OK: true, AvailableBytes: 10 * gib},
			Eviction: []engine.EvictionLine{
				{Signal: "imagefs.available", Threshold: "15%", ThresholdAmount: 15 * gib, Available: 10 * gib, Crossed: true},
				{Signal: "imagefs.inodesFree", Threshold: "5%", Inodes: true, ThresholdAmount: 50, Available: 900},
			},
		},
	}
	return planView{Snapshot: s, Plan: p}
}

func TestRenderPlanTable(t *testing.T) {
	var b bytes.Buffer
	if err := renderPlanTable(&b, fixedView()); err != nil {
		t.Fatal(err)
	}
	want := `Runtime:     containerd 1.7.2 at unix:///run/containerd/containerd.sock
Pods:        none (limits only)
Snapshot:    taken 2026-01-02T15:00:00Z, evaluated at 2026-01-02T15:00:00Z, full pass
Image fs:    /var/lib/containerd  [████████████████████████████████L█H█····] 90% used  (low 80% L, high 85% H)
             10.0 GiB available of 100.0 GiB
Image GC:    triggered (90% >= high 85%): 10.0 GiB to free to reach low 80%, plan frees 11.0 GiB

Images (5, in eviction order: least recently used first):
  #  IMAGE                          ID            SIZE       LAST USED  FIRST SEEN  STATUS              DETAIL
  1  old:1                          aaaa00000000  3.0 GiB    never      2d0h ago    remove #1 space     usage 90% >= high threshold 85%
  2  ghcr.io/acme/new@1234567890ab  eeee00000000  100 B      never      now (new)   keep too-young      eligible in 2m0s
  3  web:1 (+1)                     bbbb00000000  8.0 GiB    3h10m ago  3d0h ago    remove #2 space     usage 90% >= high threshold 85%
  ──── cut line: removals above free 11.0 GiB of 10.0 GiB to free ──────────────────────────────────────────────────────────────────────────────────────
  4  nginx:1.25                     cccc00000000  512.0 MiB  0s ago     3d0h ago    keep in-use         in use by default/web/nginx (running) and 2 more
  5  registry.k8s.io/pause:3.6      dddd00000000  700.0 KiB  0s ago     3d0h ago    keep sandbox-image  sandbox image (not pinned by the runtime)

Dead containers (3, 2 to remove), by pod and container, newest first:
  POD / CONTAINER  ID  ATTEMPT  STATE    CREATED   ACTION                         DETAIL
  default/web
    nginx          c3  1        EXITED   2h0m ago  keep
    nginx          c2  0        EXITED   5h0m ago  remove #2 per-container-limit  each container keeps its newest 1 dead
  pod u9
    job            c9  0        UNKNOWN  1d2h ago  remove #1 node-limit           node limit

Sandboxes to remove (1):
  #  ID            POD          STATE     REASON
  1  s0aaaaaaaaaa  default/web  NOTREADY  superseded

Log paths to remove (1):
  /var/log/containers/web_default_nginx-c0.log  dangling

Disk reserve: nodegc's check of the old kubelet diskSpaceManager threshold (--low-diskspace-threshold-mb 256), which current kubelets do not check
  image fs ok, 10.0 GiB available; root fs unknown
  EVICTION SIGNAL     HARD THRESHOLD  AVAILABLE   CROSSED
  imagefs.available   15% (15.0 GiB)  10.0 GiB    YES
  imagefs.inodesFree  5% (50 inodes)  900 inodes  no

Events (0):
  none

Plan: remove 2 images (11.0 GiB), 2 dead containers, 1 sandbox, 1 log path.
`
	if got := b.String(); got != want {
		t.Errorf("table differs:\n%s", diffLines(got, want))
	}
}

// diffLines shows the first differing line of got and want.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d\n got: %s\nwant: %s\n\nwhole output:\n%s", i+1, gl, wl, got)
		}
	}
	return ""
}

func TestGauge(t *testing.T) {
	tests := []struct {
		name             string
		usage, low, high int
		want             string
	}{
		{"empty with the default band", 0, 80, 85, "[································L·H·····]"},
		{"full: the markers stay visible", 100, 80, 85, "[████████████████████████████████L█H█████]"},
		{"high 100 marks the last cell", 50, 80, 100, "[████████████████████············L······H]"},
		{"low equal to high shows H", 60, 70, 70, "[████████████████████████····H···········]"},
		{"out-of-range usage is clamped", 130, 80, 85, "[████████████████████████████████L█H█████]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gauge(tt.usage, tt.low, tt.high); got != tt.want {
				t.Errorf("gauge(%d, %d, %d)\n got %s\nwant %s", tt.usage, tt.low, tt.high, got, tt.want)
			}
		})
	}
}

func TestCutLine(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*planView)
		wantRow int // index of the cut line among the image rows
		want    string
	}{
		{
			name:    "a triggered plan cuts after the last space removal",
			mutate:  func(*planView) {},
			wantRow: 3,
			want:    "──── cut line: removals above free 11.0 GiB of 10.0 GiB to free ",
		},
		{
			name: "an untriggered plan puts the line on top and says why",
			mutate: func(v *planView) {
				v.Plan.ImageGC = engine.ImagePlan{UsagePercent: 70, Order: v.Plan.ImageGC.Order}
			},
			wantRow: 0,
			want:    "──── cut line: none, usage 70% is below the high threshold 85% ",
		},
		{
			name: "a reclaim-all pass cuts after its last removal",
			mutate: func(v *planView) {
				v.Plan.Pass = engine.PassReclaimAll
				v.Plan.ImageGC.CutLine = 1
				v.Plan.ImageGC.Remove = v.Plan.ImageGC.Remove[:1]
			},
			wantRow: 1,
			want:    "──── cut line: reclaim-all removals above free 3.0 GiB ",
		},
		{
			name: "a triggered plan that removes nothing cuts at the top",
			mutate: func(v *planView) {
				v.Plan.ImageGC.CutLine = 0
				v.Plan.ImageGC.Remove = nil
			},
			wantRow: 0,
			want:    "──── cut line: removals above free 0 B of 10.0 GiB to free ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := fixedView()
			tt.mutate(&v)
			var b bytes.Buffer
			renderImages(&b, v)
			lines := strings.Split(b.String(), "\n")[2:] // the title and the header
			row := -1
			for i, l := range lines {
				if strings.Contains(l, "cut line") {
					row = i
					if !strings.Contains(l, tt.want) {
						t.Errorf("cut line %q lacks %q", l, tt.want)
					}
				}
			}
			if row != tt.wantRow {
				t.Errorf("cut line at row %d, want %d:\n%s", row, tt.wantRow, b.String())
			}
		})
	}
}

func TestRenderPassKinds(t *testing.T) {
	t.Run("a containers pass does not list images", func(t *testing.T) {
		v := fixedView()
		v.Plan.Pass = engine.PassContainers
		var b bytes.Buffer
		renderPlanTable(&b, v)
		if strings.Contains(b.String(), "cut line") || !strings.Contains(b.String(), "Images: not part of a containers pass.") {
			t.Errorf("images shown in a containers pass:\n%s", b.String())
		}
	})
	t.Run("a containers pass still reads the image fs's usage, from the snapshot", func(t *testing.T) {
		v := fixedView()
		v.Plan.Pass = engine.PassContainers
		v.Plan.ImageGC = engine.ImagePlan{} // no image GC in this pass: no image plan's usage
		var b bytes.Buffer
		renderPlanTable(&b, v)
		if !strings.Contains(b.String(), " 90% used  (low 80% L, high 85% H)") {
			t.Errorf("want the snapshot's 90%% (10 of 100 GiB available):\n%s", b.String())
		}
	})
	t.Run("images held by the minimum age say when they become eligible, in a duration people read", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			records bool
			want    string
		}{
			{"without records", false, "Records:     no earlier record of these images: every one counts as first seen at "},
			{"with records of one time", true, "Records:     every image was first seen at one time, when nodegc first listed them: "},
		} {
			v := fixedView()
			v.Plan.Policy.Image.MinAge = 2 * time.Minute
			first := v.Plan.EvaluatedAt.Add(-36*time.Second - 213*time.Millisecond)
			if !tc.records { // the snapshot's own records: first seen as it was taken
				first = v.Snapshot.TakenAt
			}
			v.Snapshot.ImageRecords = nil
			for _, im := range v.Snapshot.Images {
				v.Snapshot.ImageRecords = append(v.Snapshot.ImageRecords, engine.ImageRecord{ID: im.ID, FirstDetected: first})
			}
			var b bytes.Buffer
			renderPlanTable(&b, v)
			in := "(in 2m0s, "
			if tc.records {
				in = "(in 1m24s, "
			}
			if !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), in+"--minimum-image-ttl-duration 2m0s)") {
				t.Errorf("%s: want %q and %q:\n%s", tc.name, tc.want, in, b.String())
			}
		}
	})
	t.Run("a nodefs signal read on the image fs, the root fs unknown, says so", func(t *testing.T) {
		v := fixedView()
		v.Plan.DiskReserve.RootFs = nil
		v.Plan.DiskReserve.Eviction = append(v.Plan.DiskReserve.Eviction, engine.EvictionLine{Signal: "nodefs.available", Threshold: "10%", ThresholdAmount: 10 * gib, Available: 10 * gib})
		var b bytes.Buffer
		renderPlanTable(&b, v)
		if !strings.Contains(b.String(), "nodefs.available (of the image fs: root fs unknown)") || strings.Contains(b.String(), "imagefs.available (of") {
			t.Errorf("want only the nodefs line labelled:\n%s", b.String())
		}
	})
	t.Run("an images pass does not list containers", func(t *testing.T) {
		v := fixedView()
		v.Plan.Pass = engine.PassImages
		var b bytes.Buffer
		renderPlanTable(&b, v)
		if strings.Contains(b.String(), "Dead containers") {
			t.Errorf("containers shown in an images pass:\n%s", b.String())
		}
	})
	t.Run("the effective policy comes first with its sources", func(t *testing.T) {
		v := fixedView()
		_, prov, err := resolvePolicy(policyFlags{HighThreshold: 90, Changed: map[string]bool{flagHighThreshold: true}},
			&kubeletConfig{Path: "/k.yaml", ImageGCLowThresholdPercent: ptr(75)})
		if err != nil {
			t.Fatal(err)
		}
		v.Settings = prov
		var b bytes.Buffer
		renderPlanTable(&b, v)
		head := strings.Join(strings.Split(b.String(), "\n")[:4], "\n")
		want := `Effective policy:
  --image-gc-high-threshold                90             flag
  --image-gc-low-threshold                 75             kubelet config /k.yaml
  --minimum-image-ttl-duration             2m0s           default`
		if head != want {
			t.Errorf("head\n%s\nwant\n%s", head, want)
		}
	})
}

func TestPlanSummary(t *testing.T) {
	if got := planSummary(engine.Plan{}); got != "Plan: nothing to remove." {
		t.Errorf("empty summary %q", got)
	}
}

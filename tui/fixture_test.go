package tui

import (
	tea "charm.land/bubbletea/v2"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
)

// fixedNow is the clock of every fixture.
var fixedNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

func ago(d time.Duration) time.Time { return fixedNow.Add(-d) }

func agoP(d time.Duration) *time.Time {
	t := ago(d)
	return &t
}

// fixtureSnapshot is a small node over the image GC high threshold: a
// sandbox image, images in use, pinned, too young, and candidates; a pod
// with three dead instances of one container and a removable pod.
func fixtureSnapshot() engine.Snapshot {
	img := func(n int, tag string, size int64) engine.Image {
		return engine.Image{ID: fmt.Sprintf("sha256:%02x%062d", n, n), RepoTags: []string{tag}, SizeBytes: size}
	}
	images := []engine.Image{
		img(1, "registry.k8s.io/pause:3.9", 1*mib),
		img(2, "docker.io/library/nginx:1.25", 190*mib),
		img(3, "docker.io/library/redis:7.2", 140*mib),
		img(4, "docker.io/library/busybox:1.36", 4*mib),
		img(5, "quay.io/prometheus/node-exporter:v1.8.0", 2200*mib),
		img(6, "docker.io/library/postgres:16", 430*mib),
		img(7, "ghcr.io/acme/batch-job:2024.11", 1800*mib),
		img(8, "docker.io/library/alpine:3.20", 8*mib),
		img(9, "registry.k8s.io/coredns/coredns:v1.11.1", 60*mib),
		img(10, "docker.io/library/golang:1.23", 820*mib),
	}
	images[7].Pinned = true
	recs := []engine.ImageRecord{
		{ID: images[0].ID, FirstDetected: ago(72 * time.Hour), LastUsed: agoP(time.Minute)},
		{ID: images[1].ID, FirstDetected: ago(48 * time.Hour), LastUsed: agoP(0)},
		{ID: images[2].ID, FirstDetected: ago(30 * time.Hour), LastUsed: agoP(26 * time.Hour)},
		{ID: images[3].ID, FirstDetected: ago(50 * time.Second)},
		{ID: images[4].ID, FirstDetected: ago(40 * time.Hour), LastUsed: agoP(5 * time.Hour)},
		{ID: images[5].ID, FirstDetected: ago(20 * time.Hour)},
		{ID: images[6].ID, FirstDetected: ago(10 * time.Hour), LastUsed: agoP(9 * time.Hour)},
		{ID: images[7].ID, FirstDetected: ago(70 * time.Hour)},
		{ID: images[8].ID, FirstDetected: ago(70 * time.Hour), LastUsed: agoP(0)},
		{ID: images[9].ID, FirstDetected: ago(50 * time.Second)},
	}
	sb := func(id, uid, ns, name string, state engine.SandboxState, created time.Duration) engine.Sandbox {
		return engine.Sandbox{ID: id, PodUID: uid, PodNamespace: ns, PodName: name, State: state, CreatedAt: ago(created)}
	}
	ctr := func(id, sandbox, uid, name string, attempt uint32, image engine.Image, state engine.ContainerState, created, finished time.Duration, exit int32) engine.Container {
		c := engine.Container{ID: id, PodSandboxID: sandbox, PodUID: uid, Name: name, Attempt: attempt, ImageID: image.ID,
			ImageRef: image.ID, State: state, CreatedAt: ago(created), ExitCode: exit}
		if state != engine.ContainerRunning {
			c.FinishedAt = agoP(finished)
		}
		return c
	}
	return engine.Snapshot{
		APIVersion: engine.APIVersion, Kind: engine.KindSnapshot, TakenAt: fixedNow,
		Runtime: engine.RuntimeInfo{Name: "containerd", Version: "1.7.24", Endpoint: "unix:///run/containerd/containerd.sock",
			SandboxImages: []string{"registry.k8s.io/pause:3.9"}},
		ImageFs: engine.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: 20 * gib, AvailableBytes: 2*gib + 400*mib,
			UsedBytes: 17*gib + 624*mib, Inodes: 1310720, InodesFree: 1100000},
		RootFs: &engine.FsStats{Mountpoint: "/", CapacityBytes: 40 * gib, AvailableBytes: 22 * gib, UsedBytes: 18 * gib,
			Inodes: 2621440, InodesFree: 2000000},
		Images:       images,
		ImageRecords: recs,
		Sandboxes: []engine.Sandbox{
			sb("sb-web", "uid-web", "default", "web-7d9f", engine.SandboxReady, 48*time.Hour),
			sb("sb-dns", "uid-dns", "kube-system", "coredns-5d78", engine.SandboxReady, 70*time.Hour),
			sb("sb-job", "uid-job", "batch", "report-28931", engine.SandboxNotReady, 9*time.Hour),
			sb("sb-crash", "uid-crash", "default", "api-6c4b", engine.SandboxReady, 3*time.Hour),
		},
		Containers: []engine.Container{
			ctr("c-web", "sb-web", "uid-web", "nginx", 0, images[1], engine.ContainerRunning, 48*time.Hour, 0, 0),
			ctr("c-dns", "sb-dns", "uid-dns", "coredns", 0, images[8], engine.ContainerRunning, 70*time.Hour, 0, 0),
			ctr("c-job", "sb-job", "uid-job", "report", 0, images[6], engine.ContainerExited, 9*time.Hour, 8*time.Hour, 0),
			ctr("c-api-0", "sb-crash", "uid-crash", "api", 0, images[0], engine.ContainerExited, 3*time.Hour, 170*time.Minute, 137),
			ctr("c-api-1", "sb-crash", "uid-crash", "api", 1, images[0], engine.ContainerExited, 2*time.Hour, 110*time.Minute, 137),
			ctr("c-api-2", "sb-crash", "uid-crash", "api", 2, images[0], engine.ContainerExited, time.Hour, 50*time.Minute, 1),
			ctr("c-api-3", "sb-crash", "uid-crash", "api", 3, images[0], engine.ContainerRunning, 10*time.Minute, 0, 0),
			ctr("c-mig-0", "sb-crash", "uid-crash", "migrate", 0, images[3], engine.ContainerExited, 3*time.Hour, 179*time.Minute, 0),
		},
		PodSource: engine.PodSource{Ready: true, RemovablePodUIDs: []string{"uid-job"}},
	}
}

// fixtureTree is a kubepods tree (cgroup v2, systemd) for the same node.
func fixtureTree(cpuBase uint64) *cgroupfs.Tree {
	u := func(v uint64) *uint64 { return &v }
	ctrNode := func(path, id, name string, mem, cpu, pids uint64) *cgroupfs.Node {
		return &cgroupfs.Node{Kind: cgroupfs.KindContainer, Path: path, QOS: "burstable",
			Container: &cgroupfs.ContainerRef{ID: id, Name: name}, MemoryBytes: mem, CPUUsageNanos: cpu, Pids: pids}
	}
	web := &cgroupfs.Node{Kind: cgroupfs.KindPod, Path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_web.slice",
		QOS: "burstable", Pod: &cgroupfs.PodRef{UID: "uid-web", Name: "web-7d9f", Namespace: "default"},
		MemoryBytes: 300 * uint64(mib), MemoryLimitBytes: u(512 * uint64(mib)), CPUUsageNanos: cpuBase * 3, Pids: 9,
		Children: []*cgroupfs.Node{
			ctrNode("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_web.slice/cri-containerd-c-web.scope", "c-web", "nginx", 290*uint64(mib), cpuBase*3, 8),
		}}
	dns := &cgroupfs.Node{Kind: cgroupfs.KindPod, Path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_dns.slice",
		QOS: "burstable", Pod: &cgroupfs.PodRef{UID: "uid-dns", Name: "coredns-5d78", Namespace: "kube-system"},
		MemoryBytes: 40 * uint64(mib), MemoryLimitBytes: u(170 * uint64(mib)), CPUUsageNanos: cpuBase, Pids: 12}
	stray := &cgroupfs.Node{Kind: cgroupfs.KindPod, Path: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podf00d.slice",
		QOS: "besteffort", Pod: &cgroupfs.PodRef{UID: "f00dcafe-1234", Name: cgroupfs.Unknown}, MemoryBytes: 2 * uint64(mib), Pids: 1}
	return &cgroupfs.Tree{
		Layout: cgroupfs.Layout{Mode: cgroupfs.ModeV2, Driver: cgroupfs.DriverSystemd, KubepodsPath: "/kubepods.slice"},
		Allocatable: cgroupfs.Allocatable{
			CapacityMemoryBytes: 8 * gib, CapacityMilliCPU: 4000,
			SystemReservedMemoryBytes: 512 * mib, KubeReservedMemoryBytes: 512 * mib, SystemReservedMilliCPU: 100, KubeReservedMilliCPU: 100,
			MemoryBytes: 7 * gib, MilliCPU: 3800, EnforcePods: true,
			Kubepods: &cgroupfs.KubepodsLimits{MemoryLimitBytes: u(7 * uint64(gib)), CPUWeight: u(150)},
		},
		Root: &cgroupfs.Node{Kind: cgroupfs.KindRoot, Path: "/kubepods.slice", MemoryBytes: 342 * uint64(mib),
			MemoryLimitBytes: u(7 * uint64(gib)), CPUUsageNanos: cpuBase * 4, Pids: 22,
			Children: []*cgroupfs.Node{
				{Kind: cgroupfs.KindQOS, Path: "/kubepods.slice/kubepods-besteffort.slice", QOS: "besteffort", MemoryBytes: 2 * uint64(mib), Pids: 1,
					Children: []*cgroupfs.Node{stray}},
				{Kind: cgroupfs.KindQOS, Path: "/kubepods.slice/kubepods-burstable.slice", QOS: "burstable", MemoryBytes: 340 * uint64(mib),
					CPUUsageNanos: cpuBase * 4, Pids: 21, Children: []*cgroupfs.Node{web, dns}},
			}},
	}
}

// fakeController plans with the real planner over a fixed snapshot and
// records what it is asked to apply.
type fakeController struct {
	mu       sync.Mutex
	snap     engine.Snapshot
	policy   engine.Policy
	status   engine.Status
	applied  []engine.Plan
	forced   []engine.PassKind
	previews []engine.PassKind
	// previewed are the plans Preview returned, in order.
	previewed []engine.Plan
	nextID    int64
	ch        chan engine.Notice
	// previewErr, when set, is what Preview returns.
	previewErr error
}

func newFakeController(s engine.Snapshot, p engine.Policy) *fakeController {
	return &fakeController{snap: s, policy: p, ch: make(chan engine.Notice, 16), status: engine.Status{
		NextImagePass: fixedNow.Add(3*time.Minute + 10*time.Second), NextContainerPass: fixedNow.Add(40 * time.Second), Passes: 7,
	}}
}

func (f *fakeController) Status() engine.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeController) Force(ctx context.Context, kind engine.PassKind) (engine.PassReport, error) {
	f.mu.Lock()
	f.forced = append(f.forced, kind)
	f.mu.Unlock()
	return f.Apply(ctx, engine.PlanPass(f.snap, f.policy, kind, fixedNow))
}

func (f *fakeController) Preview(_ context.Context, kind engine.PassKind) (engine.PassReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.previews = append(f.previews, kind)
	if f.previewErr != nil {
		return engine.PassReport{}, f.previewErr
	}
	p := engine.PlanPass(f.snap, f.policy, kind, fixedNow)
	f.previewed = append(f.previewed, p)
	return engine.PassReport{Kind: kind, DryRun: true, StartedAt: fixedNow, FinishedAt: fixedNow, Plan: p}, nil
}

func (f *fakeController) Apply(_ context.Context, p engine.Plan) (engine.PassReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, p)
	f.nextID++
	r := engine.PassReport{ID: f.nextID, Kind: p.Pass, Forced: true, StartedAt: fixedNow, FinishedAt: fixedNow.Add(1200 * time.Millisecond), Plan: p}
	for _, im := range p.ImageGC.Remove {
		r.Items = append(r.Items, engine.ItemResult{Kind: engine.ItemImage, ID: im.ID, Outcome: engine.OutcomeRemoved, SizeBytes: im.SizeBytes, Reason: string(im.Reason)})
		r.EstimatedBytesFreed += im.SizeBytes
	}
	for _, c := range p.ContainerGC.Remove {
		r.Items = append(r.Items, engine.ItemResult{Kind: engine.ItemContainer, ID: c.ID, Outcome: engine.OutcomeRemoved, Reason: string(c.Reason)})
	}
	return r, nil
}

func (f *fakeController) Pause(_ context.Context, p engine.Pause) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.Paused, f.status.PausedBy, f.status.PausedSince = true, "uid 0 pid 42", fixedNow
	f.status.PausedUntil, f.status.PauseHeld = p.Until, p.Held
	return nil
}

func (f *fakeController) Resume(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status.Paused, f.status.PausedBy, f.status.PausedSince = false, "", time.Time{}
	f.status.PausedUntil, f.status.PauseHeld = time.Time{}, false
	return nil
}

func (f *fakeController) Subscribe() (<-chan engine.Notice, func()) {
	return f.ch, func() {}
}

func (f *fakeController) previewedPlans() []engine.Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.Plan(nil), f.previewed...)
}

func (f *fakeController) appliedPlans() []engine.Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.Plan(nil), f.applied...)
}

// fixtureOptions are deterministic options over the fixture node. The
// clock reads *now, which the test may move.
func fixtureOptions(c Controller, now *time.Time) Options {
	snap := fixtureSnapshot()
	cpu := uint64(0)
	return Options{
		Controller: c,
		Snapshot:   func(context.Context) (engine.Snapshot, error) { return snap, nil },
		Policy:     engine.DefaultPolicy(),
		Plan:       planWith(engine.DefaultPolicy()),
		Cgroups: func(context.Context, cgroupfs.Names) (*cgroupfs.Tree, error) {
			cpu += uint64(500 * time.Millisecond)
			return fixtureTree(cpu), nil
		},
		Self:        func() (SelfSample, error) { return SelfSample{CPU: time.Second, RSSBytes: 21 * mib}, nil },
		HideSelf:    true,
		Version:     "v0.1.0-test",
		JournalPath: "/var/lib/nodegc/journal.jsonl",
		Now:         func() time.Time { return *now },
		timer:       noTimer,
	}
}

// noTimer arms no clock tick: tests that drive the model by hand run
// every command they get (runCmd), and a tick would wait in real time.
func noTimer(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }

// planWith is an Options.Plan for a fixture without an engine: the
// planner with the policy as it stands (no fresh-start hold-back).
func planWith(p engine.Policy) func(engine.Snapshot, engine.PassKind, time.Time) (engine.Plan, error) {
	return func(s engine.Snapshot, kind engine.PassKind, at time.Time) (engine.Plan, error) {
		return engine.PlanPass(s, p, kind, at), nil
	}
}

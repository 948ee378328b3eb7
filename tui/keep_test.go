package tui

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// settledSnapshot is the fixture node once nothing on it is young and its
// image filesystem is below the high threshold: a plan of it moves only
// with the node, never with the clock alone.
func settledSnapshot() engine.Snapshot {
	s := fixtureSnapshot()
	s.ImageFs.AvailableBytes = s.ImageFs.CapacityBytes / 2
	s.ImageFs.UsedBytes = s.ImageFs.CapacityBytes - s.ImageFs.AvailableBytes
	recs := make([]engine.ImageRecord, len(s.ImageRecords))
	for i, r := range s.ImageRecords {
		if fixedNow.Sub(r.FirstDetected) < time.Hour {
			r.FirstDetected = ago(time.Hour)
		}
		recs[i] = r
	}
	s.ImageRecords = recs
	return s
}

// relisted is s listed again at at, as the engine lists it: the same
// objects, taken at at, and every image a container uses last used at at.
func relisted(s engine.Snapshot, at time.Time) engine.Snapshot {
	inUse := map[string]bool{}
	for _, c := range s.Containers {
		inUse[c.ImageID] = true
	}
	recs := make([]engine.ImageRecord, len(s.ImageRecords))
	for i, r := range s.ImageRecords {
		if inUse[r.ID] {
			t := at
			r.LastUsed = &t
		}
		recs[i] = r
	}
	s.ImageRecords, s.TakenAt = recs, at
	return s
}

func TestKeepable(t *testing.T) {
	pol := engine.DefaultPolicy()
	base := relisted(settledSnapshot(), fixedNow)
	plan := engine.PlanPass(base, pol, engine.PassFull, fixedNow)
	later := fixedNow.Add(SafetyInterval)
	if !keepable(base, plan, pol, relisted(base, later), later) {
		t.Fatal("the settled node listed again a minute later: not kept; want kept")
	}
	// Each case changes one thing the plan or the screen depends on.
	cases := []struct {
		name string
		pol  func(*engine.Policy)
		at   time.Duration // after fixedNow; SafetyInterval when 0
		node func(*engine.Snapshot)
		// young plans the old snapshot as it was: with images too young.
		young bool
	}{
		{name: "a container exited", node: func(s *engine.Snapshot) {
			s.Containers[0].State = engine.ContainerExited
		}},
		{name: "a container's exit code read differently", node: func(s *engine.Snapshot) {
			s.Containers[2].ExitCode = 3
		}},
		{name: "a container's finish time read differently", node: func(s *engine.Snapshot) {
			s.Containers[2].FinishedAt = agoP(7 * time.Hour)
		}},
		{name: "a sandbox was created again", node: func(s *engine.Snapshot) {
			s.Sandboxes = append([]engine.Sandbox(nil), s.Sandboxes...)
			s.Sandboxes[3].CreatedAt = ago(time.Hour)
		}},
		{name: "the runtime names another sandbox image", node: func(s *engine.Snapshot) {
			s.Runtime.SandboxImages = []string{"registry.k8s.io/pause:3.10"}
		}},
		{name: "an image was tagged again", node: func(s *engine.Snapshot) {
			s.Images[2].RepoTags = []string{"docker.io/library/redis:7.4"}
		}},
		{name: "a pod log directory appeared", node: func(s *engine.Snapshot) {
			s.Logs = &engine.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{"batch_report-28931_uid-job"}}
		}},
		{name: "the pod source found another removable pod", node: func(s *engine.Snapshot) {
			s.PodSource.RemovablePodUIDs = append(s.PodSource.RemovablePodUIDs, "uid-crash")
		}},
		{name: "the root filesystem filled", node: func(s *engine.Snapshot) {
			fs := *s.RootFs
			fs.AvailableBytes = 100 * mib
			s.RootFs = &fs
		}},
		{name: "an image's record was reset", node: func(s *engine.Snapshot) {
			s.ImageRecords[5].FirstDetected = ago(time.Minute)
		}},
		{name: "an unused image was last used after the clock", node: func(s *engine.Snapshot) {
			s.ImageRecords[2].LastUsed = agoP(-time.Hour)
		}},
		{name: "the clock stepped back", at: -time.Second},
		{name: "an image was too young at the plan", young: true},
		{name: "MaxAge is configured", pol: func(p *engine.Policy) { p.Image.MaxAge = 24 * time.Hour }},
		{name: "a dead container is younger than the container MinAge", pol: func(p *engine.Policy) {
			p.Container.MinAge = 2 * time.Hour
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := engine.DefaultPolicy()
			if tc.pol != nil {
				tc.pol(&p)
			}
			old := base
			if tc.young {
				old = relisted(fixtureSnapshot(), fixedNow)
				old.ImageFs = base.ImageFs
			}
			at := fixedNow.Add(SafetyInterval)
			if tc.at != 0 {
				at = fixedNow.Add(tc.at)
			}
			cur := relisted(old, at)
			// Deep copies of what the case changes, so base stays.
			cur.Containers = append([]engine.Container(nil), cur.Containers...)
			cur.Images = append([]engine.Image(nil), cur.Images...)
			cur.PodSource.RemovablePodUIDs = append([]string(nil), cur.PodSource.RemovablePodUIDs...)
			if tc.node != nil {
				tc.node(&cur)
			}
			plan := engine.PlanPass(old, p, engine.PassFull, fixedNow)
			if keepable(old, plan, p, cur, at) {
				t.Error("kept the shown plan; want a new one")
			}
		})
	}
}

// TestSafetyRelistKeepsThePlan pins the event stream's safety net on an
// idle node: a re-list that reads the node as shown makes no plan and
// hands the panes nothing new, but makes the data as fresh as it, records
// the usage it read and releases its listing (Options.AfterRefresh); one
// that finds a change plans and shows it.
//
// It runs in a synctest bubble (runQuick): the re-list's re-armed tick
// fires on synctest's clock.
func TestSafetyRelistKeepsThePlan(t *testing.T) { synctest.Test(t, safetyRelistKeepsThePlan) }

func safetyRelistKeepsThePlan(t *testing.T) {
	now := fixedNow
	node := settledSnapshot()
	var changed atomic.Bool
	c := newFakeController(node, engine.DefaultPolicy())
	o := fixtureOptions(c, &now)
	o.Snapshot = func(context.Context) (engine.Snapshot, error) {
		s := relisted(node, now)
		if changed.Load() {
			s.Containers = append([]engine.Container(nil), s.Containers...)
			s.Containers[0].State = engine.ContainerExited
		}
		return s, nil
	}
	var plans, releases atomic.Int32
	o.Plan = func(s engine.Snapshot, kind engine.PassKind, at time.Time) (engine.Plan, error) {
		plans.Add(1)
		return engine.PlanPass(s, engine.DefaultPolicy(), kind, at), nil
	}
	o.AfterRefresh = func() { releases.Add(1) }
	o.Events = true
	m := followingModel(t, o)
	if m.ListInterval() != SafetyInterval {
		t.Fatalf("re-list every %s; want the safety net's %s", m.ListInterval(), SafetyInterval)
	}
	relist := func(m Model) (Model, RefreshMsg) {
		t.Helper()
		now = now.Add(SafetyInterval)
		seq := m.refreshSeq
		m, cmd := update(m, tickMsg{gen: m.listGen})
		if m.refreshSeq != seq+1 {
			t.Fatalf("the safety tick did not list the node (seq %d -> %d)", seq, m.refreshSeq)
		}
		for _, msg := range runQuick(cmd) {
			if r, ok := msg.(RefreshMsg); ok {
				nm, next := update(m, r)
				runQuick(next)
				return nm, r
			}
		}
		t.Fatal("the safety tick's re-list gave no RefreshMsg")
		return m, RefreshMsg{}
	}

	plans.Store(0)
	releases.Store(0)
	shownContainers := &m.snap.Containers[0]
	refreshes := m.refreshes
	m = send(m, keyMsg("2")) // the Images pane takes the data on screen
	staleBefore := append([]bool(nil), m.stale...)
	if staleBefore[PaneImages] || !staleBefore[PaneContainers] {
		t.Fatalf("stale panes %v; want Images fed and Containers not yet", staleBefore)
	}
	m, msg := relist(m)
	if !msg.Kept {
		t.Fatal("the idle node listed again: not kept; want the shown plan kept")
	}
	if got := plans.Load(); got != 0 {
		t.Errorf("a kept re-list planned %d times; want 0", got)
	}
	if got := releases.Load(); got != 1 {
		t.Errorf("a kept re-list released its listing's garbage %d times; want 1", got)
	}
	if &m.snap.Containers[0] != shownContainers {
		t.Error("a kept re-list replaced the shown snapshot")
	}
	if !m.at.Equal(now) || m.refreshes != refreshes+1 {
		t.Errorf("a kept re-list: data at %s, refreshes %d; want %s and %d", m.at, m.refreshes, now, refreshes+1)
	}
	for i, stale := range m.stale {
		if stale != staleBefore[i] {
			t.Errorf("pane %d: stale %v -> %v after a kept re-list; want unchanged (it would take the same data again)", i, staleBefore[i], stale)
		}
	}

	changed.Store(true)
	m, msg = relist(m)
	if msg.Kept {
		t.Fatal("a container exited: the re-list kept the shown plan")
	}
	if got := plans.Load(); got != 1 {
		t.Errorf("a re-list that found a change planned %d times; want 1", got)
	}
	if got := releases.Load(); got != 2 {
		t.Errorf("a re-list that found a change: %d releases in all; want 2", got)
	}
	if m.snap.Containers[0].State != engine.ContainerExited {
		t.Error("the change is not shown")
	}
	if m.stale[PaneImages] || !m.stale[PaneContainers] {
		t.Errorf("stale panes %v after a change; want the Images pane on screen fed and the hidden ones stale", m.stale)
	}
}

// TestStreamSafetyInterval pins the event stream's safety net: every
// StreamSafetyInterval while no pod source is ready (every change shown
// comes with an event then, as the kubelet's evented PLEG assumes), every
// SafetyInterval while one is (its view moves with no runtime event), and
// re-armed when a refresh finds the pod source came or went.
func TestStreamSafetyInterval(t *testing.T) {
	now := fixedNow
	var ready atomic.Bool
	c := newFakeController(settledSnapshot(), engine.DefaultPolicy())
	o := fixtureOptions(c, &now)
	o.Snapshot = func(context.Context) (engine.Snapshot, error) {
		s := relisted(settledSnapshot(), now)
		s.PodSource = engine.PodSource{Ready: ready.Load(), RemovablePodUIDs: []string{}}
		return s, nil
	}
	o.Events = true
	m := followingModel(t, o)
	if got := m.ListInterval(); got != StreamSafetyInterval {
		t.Fatalf("stream live, no pod source: re-list every %s; want %s", got, StreamSafetyInterval)
	}
	// A refresh applied, its commands not run (the re-armed tick would
	// wait out its interval).
	refresh := func(m Model) Model {
		m.startRefresh(true)
		return finishRefresh(t, m)
	}
	ready.Store(true)
	m = refresh(m)
	if got := m.ListInterval(); got != SafetyInterval {
		t.Errorf("a pod source became ready: re-list every %s; want %s", got, SafetyInterval)
	}
	gen := m.listGen
	ready.Store(false)
	m = refresh(m)
	if got := m.ListInterval(); got != StreamSafetyInterval || m.listGen == gen {
		t.Errorf("the pod source went: re-list every %s (re-armed %v); want %s, re-armed", got, m.listGen != gen, StreamSafetyInterval)
	}
	m, _ = update(m, streamNotice(m, engine.EventStream{Down: "EOF"}))
	if got := m.ListInterval(); got != m.o.RefreshInterval {
		t.Errorf("the stream broke: re-list every %s; want the refresh interval %s", got, m.o.RefreshInterval)
	}
}

// followingModel is a 100×30 dashboard on o, past its first refresh and
// following a live event stream.
func followingModel(t *testing.T, o Options) Model {
	t.Helper()
	m := New(o)
	m = send(m, tea.WindowSizeMsg{Width: 100, Height: 30})
	m = finishRefresh(t, m)
	m, _ = update(m, streamNotice(m, liveStream))
	if m.refreshing {
		m = finishRefresh(t, m)
	}
	return m
}

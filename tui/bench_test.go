package tui

import (
	"context"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// largeModel is the dashboard at 100×30 over simnode.DemoLarge (2,000
// images, 1,000 pods, 5,000 dead containers), with the snapshot it shows.
func largeModel(b *testing.B) (Model, engine.Snapshot) {
	b.Helper()
	n, e := simEngine(b, simnode.DemoLarge(1))
	snap, err := e.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	s := engine.NewScheduler(e, engine.SchedulerOptions{})
	m := New(simOptions(s, n.Now))
	m = send(m, windowSize(100, 30))
	return m, snap
}

// plan is the dashboard's plan of the snapshot: the engine's, as a
// refresh makes it.
func plan(b *testing.B, m Model, snap engine.Snapshot, now time.Time) engine.Plan {
	p, err := m.o.Plan(snap, engine.PassFull, now)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// refreshedModel is largeModel after one refresh, showing the pane.
func refreshedModel(b *testing.B, pane Pane) Model {
	b.Helper()
	m, snap := largeModel(b)
	now := m.o.Now()
	nm, _ := m.Update(RefreshMsg{Seq: m.refreshSeq, At: now, Snapshot: snap, Plan: plan(b, m, snap, now)})
	m = nm.(Model)
	m.activate(pane)
	return m
}

// BenchmarkRefresh is one refresh as the dashboard does it every 2 s: plan
// the snapshot, hand the result to every pane, and render the screen.
func BenchmarkRefresh(b *testing.B) {
	for _, pane := range []Pane{PaneOverview, PaneImages, PaneContainers, PaneEvents} {
		b.Run(paneName[pane], func(b *testing.B) {
			m, snap := largeModel(b)
			m.activate(pane)
			now := m.o.Now()
			dead := 0
			for _, c := range snap.Containers {
				if c.State != engine.ContainerRunning {
					dead++
				}
			}
			b.ReportMetric(float64(len(snap.Images)), "images")
			b.ReportMetric(float64(dead), "dead")
			for b.Loop() {
				nm, _ := m.Update(RefreshMsg{Seq: m.refreshSeq, At: now, Snapshot: snap, Plan: plan(b, m, snap, now)})
				m = nm.(Model)
				_ = m.Screen()
			}
		})
	}
}

var paneName = map[Pane]string{PaneOverview: "Overview", PaneImages: "Images", PaneContainers: "Containers", PaneCgroups: "Cgroups", PaneEvents: "Events"}

// BenchmarkDrillDown is enter on the first row of a pane of the large
// demo (an image, a pod) and the render of its details.
func BenchmarkDrillDown(b *testing.B) {
	for _, pane := range []Pane{PaneImages, PaneContainers} {
		b.Run(paneName[pane], func(b *testing.B) {
			m := refreshedModel(b, pane)
			for b.Loop() {
				nm, _ := m.Update(keyMsg("enter"))
				if !nm.(Model).ModalOpen() {
					b.Fatal("enter opened no details")
				}
				_ = nm.(Model).Screen()
			}
		})
	}
}

// BenchmarkOverviewHistory is a refresh and render of the Overview at
// 220x60 with a full history (MaxHistory samples of each series).
func BenchmarkOverviewHistory(b *testing.B) {
	m, snap := largeModel(b)
	m = send(m, windowSize(220, 60))
	now := m.o.Now()
	for i := range 720 {
		var usage engine.Plan
		usage.ImageGC.UsagePercent = 70 + i%20
		m.broadcast(feed.State{At: now.Add(time.Duration(i-720) * time.Second), Refreshes: uint64(1000 + i), Plan: usage})
		m.broadcast(feed.Pass{Report: engine.PassReport{FinishedAt: now.Add(time.Duration(i-720) * time.Second), EstimatedBytesFreed: int64(i) << 20}})
	}
	for b.Loop() {
		nm, _ := m.Update(RefreshMsg{Seq: m.refreshSeq, At: now, Snapshot: snap, Plan: plan(b, m, snap, now)})
		m = nm.(Model)
		_ = m.Screen()
	}
}

// BenchmarkView is one render of the Images pane over 2,000 images: only
// the visible rows are drawn.
func BenchmarkView(b *testing.B) {
	m := refreshedModel(b, PaneImages)
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkKeyDown is one cursor move in the Containers pane (5,000 dead
// containers) plus the render that follows.
func BenchmarkKeyDown(b *testing.B) {
	m := refreshedModel(b, PaneContainers)
	for b.Loop() {
		nm, _ := m.Update(keyMsg("down"))
		m = nm.(Model)
		_ = m.Screen()
	}
}

// BenchmarkClockTick is what the idle dashboard does each second on the
// Overview of the large demo at 120×36 with the event stream live: the
// clock's tick moves a countdown or an age, and the screen is drawn again.
func BenchmarkClockTick(b *testing.B) {
	m := refreshedModel(b, PaneOverview)
	m = send(m, windowSize(120, 36))
	m.eventsLive = true // the tab bar then says nothing of the data's age
	for b.Loop() {
		nm, _ := m.Update(clockMsg{gen: m.clockGen})
		m = nm.(Model)
		_ = m.View()
	}
}

// BenchmarkQuietMessage is a message that changes nothing on screen (a
// timer that only starts a read) and the View that follows it, which
// draws the last frame again.
func BenchmarkQuietMessage(b *testing.B) {
	m := refreshedModel(b, PaneOverview)
	m = send(m, windowSize(120, 36))
	for b.Loop() {
		nm, _ := m.Update(clockMsg{gen: m.clockGen + 1})
		m = nm.(Model)
		_ = m.View()
	}
}

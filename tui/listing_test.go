package tui

import (
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// Issue 22: a listing the engine made for a pass stands in for the
// dashboard's safety-net re-list when it reads as the screen does, and
// lists the node for the screen when it does not.
func TestEngineListings(t *testing.T) {
	now := fixedNow
	snap := fixtureSnapshot()
	ch := make(chan Listing, 1)
	o := fixtureOptions(newFakeController(snap, engine.DefaultPolicy()), &now)
	o.Listings = ch
	m := refreshNow(t, send(New(o), windowSize(100, 30)))
	if m.digest != Digest(snap) {
		t.Fatalf("the shown snapshot's digest is %x, want Digest of it %x", m.digest, Digest(snap))
	}

	t.Run("the same node, later: as fresh as the listing, no re-list", func(t *testing.T) {
		seq := m.refreshSeq
		at := now.Add(30 * time.Second)
		got, _ := update(m, listingMsg{l: Listing{At: at, Digest: m.digest}, ok: true})
		if got.refreshSeq != seq || got.refreshing {
			t.Error("an unchanged listing started a re-list")
		}
		if !got.freshAt().Equal(at) {
			t.Errorf("fresh as of %s, want the listing's %s", got.freshAt(), at)
		}
		// The safety net then waits a full interval from the listing.
		got.eventsLive, got.listEvery = true, SafetyInterval
		now = at.Add(SafetyInterval / 2)
		got, cmd := update(got, tickMsg{gen: got.listGen})
		if got.refreshing || cmd == nil {
			t.Errorf("the safety net listed %s after a listing that read the same", SafetyInterval/2)
		}
		now = fixedNow
	})

	t.Run("a changed node: listed for the screen", func(t *testing.T) {
		seq := m.refreshSeq
		got, _ := update(m, listingMsg{l: Listing{At: now.Add(time.Second), Digest: m.digest + 1}, ok: true})
		if !got.refreshing || got.refreshSeq == seq {
			t.Error("a listing that differs from the screen did not list the node")
		}
	})

	t.Run("an older listing, or the dashboard's own: nothing", func(t *testing.T) {
		seq := m.refreshSeq
		got, _ := update(m, listingMsg{l: Listing{At: m.at, Digest: m.digest + 1}, ok: true})
		if got.refreshing || got.refreshSeq != seq || !got.freshAt().Equal(m.at) {
			t.Error("a listing no newer than the screen's changed what the dashboard does")
		}
	})

	t.Run("the digest sees what the screen shows", func(t *testing.T) {
		d := Digest(snap)
		for name, change := range map[string]func(*engine.Snapshot){
			"a container's state":  func(s *engine.Snapshot) { s.Containers[0].State = engine.ContainerExited },
			"an image's size":      func(s *engine.Snapshot) { s.Images[0].SizeBytes++ },
			"an image gone":        func(s *engine.Snapshot) { s.Images = s.Images[1:] },
			"a sandbox's state":    func(s *engine.Snapshot) { s.Sandboxes[0].State = engine.SandboxNotReady },
			"the usage":            func(s *engine.Snapshot) { s.ImageFs.AvailableBytes /= 2 },
			"a pod made removable": func(s *engine.Snapshot) { s.PodSource.RemovablePodUIDs = append(s.PodSource.RemovablePodUIDs, "u") },
		} {
			s := fixtureSnapshot()
			s.Containers = append([]engine.Container(nil), s.Containers...)
			s.Sandboxes = append([]engine.Sandbox(nil), s.Sandboxes...)
			s.Images = append([]engine.Image(nil), s.Images...)
			change(&s)
			if Digest(s) == d {
				t.Errorf("%s: same digest", name)
			}
		}
		s := fixtureSnapshot()
		s.TakenAt = s.TakenAt.Add(time.Hour)
		if Digest(s) != d {
			t.Error("the time of a listing changed its digest")
		}
	})
}

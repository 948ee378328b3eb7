// Listings the engine made for its own use (a periodic pass, a preview):
// the dashboard learns from each whether the node still reads as it shows
// it, so a pass's listing stands in for the dashboard's own safety-net
// re-list, and a change it saw is listed at once.

package tui

import (
	"hash/maphash"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// Listing is a listing of the node the engine made, told to the dashboard
// (Options.Listings): when it was taken and the Digest of what it holds.
type Listing struct {
	At     time.Time
	Digest uint64
}

var digestSeed = maphash.MakeSeed()

// Digest sums up what the dashboard shows of a snapshot: its containers
// (ID and state), sandboxes (ID and state), images (ID, size, pinned), the
// image filesystem's usage and the pod source's removable pods. Two
// snapshots with one digest give the same screen, the clock aside. It is
// cheap enough to run on every snapshot the engine takes (a hash per
// object, no allocation per object).
func Digest(s engine.Snapshot) uint64 {
	sum := engine.ContainersFingerprint(s.Containers)
	var h maphash.Hash
	h.SetSeed(digestSeed)
	one := func() uint64 {
		v := h.Sum64()
		h.Reset()
		return v
	}
	for _, b := range s.Sandboxes {
		h.WriteString(b.ID)
		h.WriteByte(0)
		h.WriteString(string(b.State))
		sum += one()
	}
	var buf []byte
	for _, im := range s.Images {
		h.WriteString(im.ID)
		buf = strconv.AppendInt(buf[:0], im.SizeBytes, 10)
		buf = strconv.AppendBool(buf, im.Pinned)
		h.Write(buf)
		sum += one()
	}
	if u, err := engine.UsagePercent(s.ImageFs); err == nil {
		h.WriteString("usage " + strconv.Itoa(u))
		sum += one()
	}
	h.WriteString("pods " + strconv.FormatBool(s.PodSource.Ready))
	sum += one()
	for _, uid := range s.PodSource.RemovablePodUIDs {
		h.WriteString("removable " + uid)
		sum += one()
	}
	return sum
}

// listingMsg is a listing the engine made, or the channel closed (!ok).
type listingMsg struct {
	l  Listing
	ok bool
}

func waitListing(ch <-chan Listing) tea.Cmd {
	return func() tea.Msg {
		l, ok := <-ch
		return listingMsg{l: l, ok: ok}
	}
}

// onListing takes a listing the engine made: one taken after the shown
// snapshot that reads the same makes the data as fresh as it (the
// safety-net re-list waits a full interval from it); one that differs
// lists the node for the screen now.
func (m *Model) onListing(msg listingMsg) tea.Cmd {
	if !msg.ok {
		return nil
	}
	next := waitListing(m.o.Listings)
	if !m.haveSnap || !msg.l.At.After(m.freshAt()) {
		m.quiet = true
		return next
	}
	if msg.l.Digest == m.digest {
		// Fresher data changes the screen only where it says how old the
		// data is (while polling).
		m.quiet = !m.asOfShown()
		m.checkedAt = msg.l.At
		return next
	}
	m.quiet = true // the re-list shows when its answer comes
	return tea.Batch(next, m.onEvent())
}

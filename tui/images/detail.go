package images

import (
	"fmt"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// Detail is what enter opens on the selected image: every tag and digest,
// its size and records, and the engine's word on it: its place in
// eviction order, what the plan does with it and why, whether it is a
// sandbox image, and the containers using it.
func (m Model) Detail() (feed.Detail, bool) {
	id, ok := m.Selected()
	if !ok {
		return feed.Detail{}, false
	}
	var it *item
	for i := range m.items {
		if m.items[i].row.Image.ID == id {
			it = &m.items[i]
		}
	}
	if it == nil {
		return feed.Detail{}, false
	}
	r := it.row
	im := r.Image
	l := []string{"ID        " + id}
	tags := im.RepoTags
	if len(tags) == 0 {
		tags = []string{"(untagged)"}
	}
	for i, t := range tags {
		l = append(l, field(i, "TAGS", t))
	}
	for i, d := range im.RepoDigests {
		l = append(l, field(i, "DIGESTS", d))
	}
	l = append(l, "SIZE      "+format.Bytes(im.SizeBytes)+" (runtime-reported)")
	pinned := "no"
	if im.Pinned {
		pinned = "yes (by the runtime)"
	}
	sandbox := "no"
	if r.SandboxImage {
		sandbox = "yes (never removed)"
	}
	l = append(l, "PINNED    "+pinned, "SANDBOX   "+sandbox,
		"FIRST     "+when(r.FirstDetected, "—", m.Grid.Now()),
		"LAST USED "+when(r.LastUsed, "never", m.Grid.Now()),
		fmt.Sprintf("ORDER     #%d of %d in LRU (eviction) order", r.Rank, len(m.items)),
		"VERDICT   "+it.status)
	if r.Action == engine.ActionRemove {
		l = append(l, fmt.Sprintf("          removal %d of %d (%s)%s", r.Step, len(m.plan.ImageGC.Remove), r.Reason, cutNote(r.Rank, m.cut)))
	}
	if r.Detail != "" {
		l = append(l, "          "+r.Detail)
	}
	l = append(l, "", fmt.Sprintf("CONTAINERS USING IT (%d, any state)", len(r.UsedBy)))
	for _, u := range r.UsedBy {
		l = append(l, "  "+u)
	}
	if len(r.UsedBy) == 0 {
		l = append(l, "  none")
	}
	raw := struct {
		Image       engine.Image    `json:"image"`
		Explanation engine.ImageRow `json:"explanation"`
	}{im, r}
	return feed.Detail{Title: "Image " + it.name, Lines: l, Raw: raw}, true
}

// when is an instant and how long ago it was, or none for nil.
func when(t *time.Time, none string, now time.Time) string {
	if t == nil {
		return none
	}
	return t.Format("2006-01-02 15:04:05") + " (" + format.Duration(now.Sub(*t)) + " ago)"
}

func field(i int, name, v string) string {
	if i > 0 {
		name = ""
	}
	return fmt.Sprintf("%-9s %s", name, v)
}

// cutNote says on which side of the engine's cut line the rank falls.
func cutNote(rank int, cut engine.CutLine) string {
	if cut.Row > 0 && rank <= cut.Row {
		return ", above the cut line"
	}
	return ""
}

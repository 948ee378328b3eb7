package images

import (
	"fmt"
	"slices"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/human"
)

// Detail is what enter opens on the selected image: every tag and digest,
// its size and records, each container using it, and why it stays or
// where it sits in the removal order.
func (m Model) Detail() (feed.Detail, bool) {
	id, ok := m.SelectedID()
	if !ok {
		return feed.Detail{}, false
	}
	im, ok := m.x.Images[id]
	if !ok {
		return feed.Detail{}, false
	}
	var it item
	for _, i := range m.items {
		if i.id == id {
			it = i
		}
	}
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
	l = append(l, "SIZE      "+human.Bytes(im.SizeBytes)+" (runtime-reported)")
	pinned := "no"
	if im.Pinned {
		pinned = "yes (by the runtime)"
	}
	l = append(l, "PINNED    "+pinned)
	first, last := "—", "never"
	if !it.firstSeen.IsZero() {
		first = it.firstSeen.Format("2006-01-02 15:04:05") + " (" + human.Duration(m.now.Sub(it.firstSeen)) + " ago)"
	}
	if !it.lastUsed.IsZero() {
		last = it.lastUsed.Format("2006-01-02 15:04:05") + " (" + human.Duration(m.now.Sub(it.lastUsed)) + " ago)"
	}
	l = append(l, "FIRST     "+first, "LAST USED "+last,
		fmt.Sprintf("ORDER     #%d of %d in LRU (eviction) order", it.rank, len(m.items)),
		"VERDICT   "+it.status)
	if i := slices.IndexFunc(m.plan.ImageGC.Remove, func(r engine.ImageRemoval) bool { return r.ID == id }); i >= 0 {
		r := m.plan.ImageGC.Remove[i]
		l = append(l, fmt.Sprintf("          removal %d of %d (%s)%s", i+1, len(m.plan.ImageGC.Remove), r.Reason, cutNote(it.rank, m.cutLine)))
	}
	for _, k := range m.plan.ImageGC.Keep {
		if k.ID == id && k.Detail != "" {
			l = append(l, "          kept: "+string(k.Reason)+": "+k.Detail)
		}
	}
	users := engine.ImagesInUse([]engine.Image{im}, m.snap.Containers)[id]
	l = append(l, "", fmt.Sprintf("CONTAINERS USING IT (%d, any state)", len(users)))
	for _, c := range users {
		pod := m.x.PodOf(c)
		l = append(l, fmt.Sprintf("  %-40s %-10s %s", pod.String()+"/"+c.Name, c.State.Short(), human.ShortID(c.ID)))
	}
	if len(users) == 0 {
		l = append(l, "  none")
	}
	return feed.Detail{Title: "Image " + it.name, Lines: l}, true
}

func field(i int, name, v string) string {
	if i > 0 {
		name = ""
	}
	return fmt.Sprintf("%-9s %s", name, v)
}

func cutNote(n, cut int) string {
	if cut > 0 && n <= cut {
		return ", above the cut line"
	}
	return ""
}

package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// openRemoveOne previews the removal of the selected row's image or dead
// container alone (ctrl+d). The engine decides: its reclaim-all plan, the
// widest it makes, is previewed, and the one-item plan is that plan's
// removal of the item, applied like any previewed plan (the executor's
// re-checks, the journal). What the engine keeps stays: the preview says
// why (in use, pinned, the sandbox image, too young, running).
func (m Model) openRemoveOne() (tea.Model, tea.Cmd) {
	it, ok := m.activePane().Item()
	if !ok {
		m.setFlash(m.keys.RemoveOne.Help().Key+" removes one image (Images) or dead container (Containers): select its row", true)
		return m, nil
	}
	nm, cmd := m.openPreview(engine.PassReclaimAll, false)
	mm := nm.(Model)
	if mm.modal != nil && mm.modal.loading {
		d := *mm.modal
		d.one, d.title = &it, fmt.Sprintf("Remove %s %s alone", it.Kind, it.Name)
		mm.modal = &d
	}
	return mm, cmd
}

// onePlan is p cut down to the removal of it alone, and "" ; or, when p
// does not remove it, why the engine keeps it (its explanation over s).
func onePlan(s engine.Snapshot, p engine.Plan, it feed.Item) (engine.Plan, string) {
	q := p
	q.ImageGC.Remove, q.ImageGC.Events, q.ImageGC.BytesFreed = nil, nil, 0
	q.ContainerGC.Remove = nil
	q.SandboxGC, q.LogGC = engine.SandboxPlan{}, engine.LogPlan{}
	for _, r := range p.ImageGC.Remove {
		if it.Kind == engine.ItemImage && r.ID == it.ID {
			q.ImageGC.Remove, q.ImageGC.BytesFreed = append(q.ImageGC.Remove, r), r.SizeBytes
		}
	}
	for _, r := range p.ContainerGC.Remove {
		if it.Kind == engine.ItemContainer && r.ID == it.ID {
			q.ContainerGC.Remove = append(q.ContainerGC.Remove, r)
		}
	}
	if len(q.ImageGC.Remove)+len(q.ContainerGC.Remove) > 0 {
		return q, ""
	}
	x := engine.Explain(s, p)
	why := "the engine does not remove it now"
	for _, r := range x.Images {
		if it.Kind == engine.ItemImage && r.Image.ID == it.ID {
			why = keptWhy(r.Reason, r.Detail)
		}
	}
	for _, r := range x.Containers {
		if it.Kind == engine.ItemContainer && r.ID == it.ID {
			why = keptWhy(r.Reason, r.Detail)
		}
	}
	return q, fmt.Sprintf("%s %s stays: %s. Nothing will be removed.", it.Kind, it.Name, why)
}

func keptWhy(reason, detail string) string {
	if detail == "" {
		return reason
	}
	return reason + " (" + detail + ")"
}

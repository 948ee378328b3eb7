package events

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// Detail is what enter opens on the selected pass (or one of its item
// rows): every item the pass planned, with what happened to it, from the
// report the engine published; the same items are in the journal under
// the pass ID.
func (m Model) Detail() (feed.Detail, bool) {
	e := m.selectedPass()
	if e == nil {
		return feed.Detail{}, false
	}
	p := &e.PassReport
	l := m.summaryLines(e)
	l = append(l, itemsLine(p))
	l = append(l, endLines(p)...)
	l = append(l, "")
	l = append(l, itemLines(p)...)
	return feed.Detail{Title: fmt.Sprintf("Pass #%d", p.ID), Lines: l, Raw: *p}, true
}

// selectedPass is the pass of the selected row, whether the row is the
// pass itself or one of its items; nil when nothing is selected.
func (m Model) selectedPass() *entry {
	r, ok := m.Grid.Selected()
	if !ok {
		return nil
	}
	for i := range m.passes {
		if k := m.passes[i].key(); r.Key == k || strings.HasPrefix(r.Key, k+"/") {
			return &m.passes[i]
		}
	}
	return nil
}

// summaryLines are the pass's kind, when it ran, the quiet passes folded
// into it, where the journal holds it, and what it freed.
func (m Model) summaryLines(e *entry) []string {
	p := &e.PassReport
	l := []string{
		fmt.Sprintf("KIND      %s%s", p.Kind, map[bool]string{true: " (forced)"}[p.Forced]),
		fmt.Sprintf("RAN       %s %s → %s (%s)", p.StartedAt.Format(time.DateOnly), p.StartedAt.Format(clock), p.FinishedAt.Format(clock), took(*p)),
	}
	if e.folded > 0 {
		l = append(l, fmt.Sprintf("BEFORE    %d earlier periodic passes (%s) since %s, the first #%d, removed nothing either: each had nothing to do or was skipped",
			e.folded, p.Kind, since(*e), e.firstID))
	}
	if id := p.PassID(); id != "" && m.journal != "" {
		l = append(l, "JOURNAL   pass "+id+" in "+m.journal)
	} else if id != "" {
		l = append(l, "JOURNAL   pass "+id)
	}
	measured := "not measured"
	if p.MeasuredBytesFreed != nil {
		measured = format.Bytes(*p.MeasuredBytesFreed) + " measured"
	}
	return append(l, fmt.Sprintf("FREED     ≈ %s estimated, %s", format.Bytes(p.EstimatedBytesFreed), measured))
}

// itemsLine is how many items the pass planned and how many ended in each
// outcome, leaving out the outcomes none had.
func itemsLine(p *engine.PassReport) string {
	counts := []string{}
	for _, o := range []engine.Outcome{engine.OutcomeRemoved, engine.OutcomeGone, engine.OutcomeSkipped, engine.OutcomeFailed, engine.OutcomeNotRun} {
		if n := p.Count(o); n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", o, n))
		}
	}
	items := fmt.Sprintf("ITEMS     %d planned", len(p.Items))
	if len(counts) > 0 {
		items += ": " + strings.Join(counts, ", ")
	}
	return items
}

// endLines say how the pass ended when it did not simply finish (its
// error, why it stopped or was skipped) and the events and notes it left.
func endLines(p *engine.PassReport) []string {
	var l []string
	if p.Error != "" {
		l = append(l, "ERROR     "+p.Error)
	}
	if p.Stopped != "" {
		l = append(l, fmt.Sprintf("STOPPED   %s (%d not run)", p.Stopped, p.Undone))
	}
	if p.Skipped != "" {
		l = append(l, "SKIPPED   "+p.Skipped)
	}
	for _, e := range p.Events {
		l = append(l, "EVENT     "+e.Reason+": "+e.Message)
	}
	for _, n := range p.Notes {
		l = append(l, "NOTE      "+n)
	}
	return l
}

// itemLines are the pass's items by kind, each with its outcome, reason,
// name, size, detail and error; with no items, one line saying why.
func itemLines(p *engine.PassReport) []string {
	var l []string
	for _, kind := range []engine.ItemKind{engine.ItemContainer, engine.ItemSandbox, engine.ItemLog, engine.ItemImage} {
		var items []engine.ItemResult
		for _, it := range p.Items {
			if it.Kind == kind {
				items = append(items, it)
			}
		}
		if len(items) == 0 {
			continue
		}
		l = append(l, fmt.Sprintf("%s (%d)", strings.ToUpper(plural(string(kind))), len(items)))
		for _, it := range items {
			l = append(l, itemLine(p, it))
		}
	}
	if len(p.Items) == 0 {
		switch {
		case p.Skipped != "":
			l = append(l, "nothing was planned: the pass was skipped (SKIPPED above)")
		case p.Error != "":
			l = append(l, "nothing was removed: the pass ended on its error (ERROR above)")
		default:
			l = append(l, "nothing was planned: the pass had nothing to do")
		}
	}
	return l
}

// itemLine is one item of the pass: its outcome, reason and name, then its
// size, detail and error when it has them.
func itemLine(p *engine.PassReport, it engine.ItemResult) string {
	s := fmt.Sprintf("  %-12s %-13s %s", it.Outcome, it.Reason, name(p.Plan, it))
	if it.SizeBytes > 0 {
		s += "  " + format.Bytes(it.SizeBytes)
	}
	if it.Detail != "" {
		s += "  (" + it.Detail + ")"
	}
	if it.Error != "" {
		s += "  error: " + it.Error
	}
	return s
}

// name is an item's name from the pass's plan: an image's first tag, a
// container's name, a log's path; else its short ID.
func name(p engine.Plan, it engine.ItemResult) string {
	switch it.Kind {
	case engine.ItemImage:
		for _, r := range p.ImageGC.Remove {
			if r.ID == it.ID && len(r.RepoTags) > 0 {
				return r.RepoTags[0] + " " + format.ShortID(it.ID)
			}
		}
	case engine.ItemContainer:
		for _, r := range p.ContainerGC.Remove {
			if r.ID == it.ID {
				return fmt.Sprintf("%s #%d %s", r.Name, r.Attempt, format.ShortID(it.ID))
			}
		}
	case engine.ItemLog:
		return it.ID
	}
	return format.ShortID(it.ID)
}

// clock is how a pass's start and end times show: to the hundredth of a
// second, so that from, to and the time it took agree.
const clock = "15:04:05.00"

// took is how long a pass ran: "340ms" under a second, "1.37s" under a
// minute, else minutes and seconds.
func took(p engine.PassReport) string {
	d := p.FinishedAt.Sub(p.StartedAt)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return format.Duration(d)
}

// plural is an item kind's plural: "sandboxes", "images".
func plural(kind string) string {
	if strings.HasSuffix(kind, "x") || strings.HasSuffix(kind, "s") {
		return kind + "es"
	}
	return kind + "s"
}

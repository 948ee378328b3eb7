package main

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
)

// renderImages prints the engine's image rows in eviction order, with
// the cut line.
func renderImages(b *bytes.Buffer, v planView) {
	rows, cut := engine.ExplainImages(v.Snapshot, v.Plan)
	at := v.Plan.EvaluatedAt
	if v.RemovalsOnly {
		fmt.Fprintf(b, "Images (%d) to remove, in order (least recently used first), %s:\n", len(v.Plan.ImageGC.Remove), keptSummary(keptReasons(rows, func(r engine.ImageRow) (engine.Action, string) { return r.Action, r.Reason })))
		rows = slices.DeleteFunc(rows, func(r engine.ImageRow) bool { return r.Action != engine.ActionRemove })
		cut.Row = len(rows)
		if len(rows) == 0 {
			return
		}
	} else {
		fmt.Fprintf(b, "Images (%d, in eviction order: least recently used first):\n", len(rows))
	}
	g := texttable.NewGrid(8, len(rows)+2)
	for _, h := range []string{"  #", "IMAGE", "ID", "SIZE", "LAST USED", "FIRST SEEN", "STATUS", "DETAIL"} {
		g.Cell(h)
	}
	sentinel := func() {
		g.Cell(texttable.RuleMarker)
		for range 7 {
			g.End()
		}
	}
	for i, r := range rows {
		if i == cut.Row {
			sentinel()
		}
		g.Add("  ")
		g.AddInt(int64(r.Rank))
		g.End()
		g.Cell(r.Name)
		g.Cell(format.ShortID(r.Image.ID))
		g.AddBytes(r.Image.SizeBytes)
		g.End()
		if r.LastUsed != nil {
			g.AddAgo(*r.LastUsed, at)
		} else {
			g.Add("never")
		}
		g.End()
		if r.FirstDetected != nil {
			g.AddAgo(*r.FirstDetected, at)
		} else {
			g.Add("now (new)")
		}
		g.End()
		switch {
		case r.Action == engine.ActionRemove:
			g.Add("remove #")
			g.AddInt(int64(r.Step))
			g.Add(" ")
		case r.Reason != "":
			g.Add("keep ")
		default:
			g.Add("-")
		}
		g.Cell(r.Reason)
		g.Cell(r.Detail)
	}
	if cut.Row == len(rows) {
		sentinel()
	}
	var tb bytes.Buffer
	g.WriteTo(&tb)
	texttable.WriteRuled(b, tb.Bytes(), cut.Text)
}

// renderContainers prints the engine's rows of dead (not running)
// containers, grouped by pod and container name, newest first, with what
// the plan does to each. A full plan can list 100,000 of them: the cells
// go into one buffer, aligned by a grid instead of a tabwriter.
func renderContainers(b *bytes.Buffer, v planView) {
	rows := engine.ExplainContainers(v.Snapshot, v.Plan)
	at := v.Plan.EvaluatedAt
	if v.RemovalsOnly {
		fmt.Fprintf(b, "Dead containers to remove (%d of %d dead), %s:\n", len(v.Plan.ContainerGC.Remove), len(rows),
			keptSummary(keptReasons(rows, func(r engine.ContainerRow) (engine.Action, string) { return r.Action, r.Reason })))
		rows = slices.DeleteFunc(rows, func(r engine.ContainerRow) bool { return r.Action != engine.ActionRemove })
		if len(rows) == 0 {
			return
		}
	}
	finishedCol, pods := false, 0 // FINISHED only when the runtime gave exit details
	for i, r := range rows {
		finishedCol = finishedCol || r.FinishedAt != nil
		if i == 0 || rows[i-1].Pod != r.Pod {
			pods++
		}
	}
	if !v.RemovalsOnly {
		fmt.Fprintf(b, "Dead containers (%d, %d to remove), by pod and container, newest first:\n", len(rows), len(v.Plan.ContainerGC.Remove))
	}
	if len(rows) == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	header := []string{"  POD / CONTAINER", "ID", "ATTEMPT", "STATE", "CREATED", "FINISHED", "ACTION", "DETAIL"}
	if !finishedCol {
		header = slices.Delete(header, 5, 6)
	}
	g := texttable.NewGrid(len(header), len(rows)+pods+1)
	for _, h := range header {
		g.Cell(h)
	}
	for i, r := range rows {
		if i == 0 || rows[i-1].Pod != r.Pod {
			g.Add("  ")
			g.Cell(r.Pod)
			for range len(header) - 1 {
				g.End()
			}
		}
		g.Add("    ")
		g.Cell(cmp.Or(r.Name, "(unnamed)"))
		g.Cell(format.ShortID(r.ID))
		g.AddUint(uint64(r.Attempt))
		g.End()
		g.Cell(shortState(r.State))
		if r.CreatedAt.IsZero() {
			g.Add("-")
		} else {
			g.AddAgo(r.CreatedAt, at)
		}
		g.End()
		if finishedCol {
			if r.FinishedAt == nil {
				g.Add("-")
			} else {
				g.AddAgo(*r.FinishedAt, at)
			}
			g.End()
		}
		if r.Action != engine.ActionRemove {
			g.Cell("keep")
			g.End()
			continue
		}
		g.Add("remove #")
		g.AddInt(int64(r.Step))
		g.Add(" ")
		g.Cell(r.Reason)
		g.Cell(r.Detail)
	}
	g.WriteTo(b)
}

// keptReasons are the reasons of the rows the plan keeps.
func keptReasons[R any](rows []R, of func(R) (engine.Action, string)) []string {
	var out []string
	for _, r := range rows {
		if a, reason := of(r); a != engine.ActionRemove {
			out = append(out, reason)
		}
	}
	return out
}

// renderSandboxes prints the sandboxes the plan stops and removes.
func renderSandboxes(b *bytes.Buffer, v planView) {
	rm := v.Plan.SandboxGC.Remove
	fmt.Fprintf(b, "Sandboxes to remove (%d):\n", len(rm))
	if len(rm) == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	tw := texttable.NewTable(b)
	fmt.Fprintln(tw, "  #\tID\tPOD\tSTATE\tREASON")
	for _, r := range engine.ExplainSandboxes(v.Snapshot, v.Plan) {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", r.Step, format.ShortID(r.ID), r.Pod, cmp.Or(shortState(engine.ContainerState(r.State)), "-"), r.Reason)
	}
	tw.Flush()
}

// renderLogs prints the log paths the plan removes.
func renderLogs(b *bytes.Buffer, v planView) {
	rm := v.Plan.LogGC.Remove
	fmt.Fprintf(b, "Log paths to remove (%d):\n", len(rm))
	if len(rm) == 0 {
		if v.Snapshot.Logs == nil {
			fmt.Fprintln(b, "  none (logs were not scanned)")
		} else {
			fmt.Fprintln(b, "  none")
		}
		return
	}
	tw := texttable.NewTable(b)
	for _, r := range rm {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Path, r.Reason)
	}
	tw.Flush()
}

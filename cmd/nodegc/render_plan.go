package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/firstseen"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
)

// planView is everything the plan table shows: the plan, the snapshot it
// was made from (for names, sizes and times the plan does not repeat), and
// optionally the effective settings with their provenance.
type planView struct {
	Plan     engine.Plan
	Snapshot engine.Snapshot
	// Settings, when non-nil, are printed first as the effective policy.
	Settings provenance
	// Endpoint says where the runtime endpoint came from ("" when the plan
	// was made from a snapshot file).
	EndpointSource string
	// Width, when above 0, is the terminal's width: every line is cut to
	// it (the tail, the detail column, gives way) instead of wrapping.
	// Piped output keeps its full width.
	Width int
	// RemovalsOnly lists only the images and containers the plan removes,
	// and counts the kept ones by reason: gc on a terminal, whose prompt
	// must not scroll 2,000 kept rows past the removals.
	RemovalsOnly bool
	// Explain, when set, returns the plan's explanation, being made
	// (engine.PlanExplained); nil: it is made when needed.
	Explain func() engine.Explanation
}

// keptSummary counts the kept rows by reason: "kept: 1990 (not-needed
// 1980, in-use 10)", in order of first appearance.
func keptSummary(reasons []string) string {
	if len(reasons) == 0 {
		return "kept: none"
	}
	n := map[string]int{}
	var order []string
	for _, r := range reasons {
		r = cmp.Or(r, "-")
		if n[r] == 0 {
			order = append(order, r)
		}
		n[r]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%s %d", r, n[r])
	}
	return fmt.Sprintf("kept: %d (%s); nodegc plan lists them", len(reasons), strings.Join(parts, ", "))
}

// gaugeWidth is the number of cells in the image filesystem gauge; one
// cell is 2.5%.
const gaugeWidth = 40

// renderPlanTable writes the plan for people: the effective policy, the
// runtime, the image filesystem against the GC band, the images in eviction
// order with the cut line, the dead containers per pod, the sandboxes and
// logs to remove, the disk reserve and the events.
func renderPlanTable(w io.Writer, v planView) error {
	var b bytes.Buffer
	if v.Settings != nil {
		renderSettings(&b, v.Settings)
		b.WriteByte('\n')
	}
	renderHeader(&b, v)
	b.WriteByte('\n')
	if includesImages(v.Plan.Pass) {
		renderImages(&b, v)
	} else {
		fmt.Fprintf(&b, "Images: not part of a %s pass.\n", v.Plan.Pass)
	}
	b.WriteByte('\n')
	if includesContainers(v.Plan.Pass) {
		renderContainers(&b, v)
		b.WriteByte('\n')
		renderSandboxes(&b, v)
		b.WriteByte('\n')
		renderLogs(&b, v)
	} else {
		fmt.Fprintf(&b, "Containers, sandboxes, logs: not part of an %s pass.\n", v.Plan.Pass)
	}
	b.WriteByte('\n')
	renderDiskReserve(&b, v.Plan.DiskReserve)
	b.WriteByte('\n')
	renderEvents(&b, v.Plan)
	b.WriteByte('\n')
	fmt.Fprintln(&b, planSummary(v.Plan))
	out := texttable.Printable(b.Bytes())
	if v.Width > 0 {
		out = texttable.FitLines(out, v.Width)
	}
	_, err := w.Write(out)
	return err
}

// includesImages reports whether a pass of the kind runs image GC.
func includesImages(k engine.PassKind) bool { return k != engine.PassContainers }

// includesContainers reports whether a pass of the kind runs container GC.
func includesContainers(k engine.PassKind) bool { return k != engine.PassImages }

// renderSettings prints the effective policy: each value and where it came
// from.
func renderSettings(b *bytes.Buffer, prov provenance) {
	fmt.Fprintln(b, "Effective policy:")
	tw := texttable.NewTable(b)
	var long []setting
	for _, s := range prov {
		if s.Name == settingEvictionHard {
			long = append(long, s) // too wide for the value column
			continue
		}
		fmt.Fprintf(tw, "  --%s\t%s\t%s\n", s.Name, s.Value, s.Source)
	}
	tw.Flush()
	for _, s := range long {
		fmt.Fprintf(b, "  %s (%s): %s\n", s.Name, s.Source, s.Value)
	}
}

// renderHeader prints the runtime line and the image filesystem gauge.
func renderHeader(b *bytes.Buffer, v planView) {
	s, p := v.Snapshot, v.Plan
	rt := s.Runtime.Name
	if s.Runtime.Version != "" {
		rt += " " + s.Runtime.Version
	}
	if rt == "" {
		rt = "unknown runtime"
	}
	if s.Runtime.Endpoint != "" {
		rt += " at " + s.Runtime.Endpoint
	}
	if v.EndpointSource != "" {
		rt += " (" + v.EndpointSource + ")"
	}
	fmt.Fprintf(b, "Runtime:     %s\n", rt)
	fmt.Fprintf(b, "Pods:        %s\n", s.PodSource.Summary())
	fmt.Fprintf(b, "Snapshot:    taken %s, evaluated at %s, %s pass\n",
		format.Time(s.TakenAt), format.Time(p.EvaluatedAt), p.Pass)

	fs := s.ImageFs
	mount := cmp.Or(fs.Mountpoint, "(unknown mountpoint)")
	if fs.CapacityBytes <= 0 {
		fmt.Fprintf(b, "Image fs:    %s  capacity %d: cannot compute usage\n", mount, fs.CapacityBytes)
		return
	}
	high, low := p.Policy.Image.HighThresholdPercent, p.Policy.Image.LowThresholdPercent
	if since, eligible, ok := firstseen.Hold(s, p.Policy.Image.MinAge, p.EvaluatedAt); ok && includesImages(p.Pass) {
		why := "no earlier record of these images: every one counts as first seen at"
		if since.Before(s.TakenAt) { // recorded before this snapshot, all at once
			why = "every image was first seen at one time, when nodegc first listed them:"
		}
		fmt.Fprintf(b, "Records:     %s %s,\n"+
			"             so none is removed before %s (%s, --minimum-image-ttl-duration %s)\n",
			why, format.Time(since), format.Time(eligible), format.In(eligible, p.EvaluatedAt), p.Policy.Image.MinAge)
	}
	// A pass without image GC has no image plan's reading: the usage is
	// the snapshot's, by the kubelet's formula (the capacity is > 0 here).
	usage := p.ImageGC.UsagePercent
	if !includesImages(p.Pass) {
		usage, _ = engine.UsagePercent(fs)
	}
	fmt.Fprintf(b, "Image fs:    %s  %s %d%% used  (low %d%% L, high %d%% H)\n",
		mount, gauge(usage, low, high), usage, low, high)
	fmt.Fprintf(b, "             %s available of %s\n", format.Bytes(fs.AvailableBytes), format.Bytes(fs.CapacityBytes))
	switch {
	case !includesImages(p.Pass):
	case p.Pass == engine.PassReclaimAll:
		fmt.Fprintf(b, "Image GC:    reclaim-all: every unused image older than %s goes, whatever the thresholds\n", p.Policy.Image.MinAge)
	case p.ImageGC.Triggered:
		fmt.Fprintf(b, "Image GC:    triggered (%d%% >= high %d%%): %s to free to reach low %d%%, plan frees %s\n",
			p.ImageGC.UsagePercent, high, format.Bytes(p.ImageGC.BytesToFree), low, format.Bytes(p.ImageGC.BytesFreed))
	default:
		fmt.Fprintf(b, "Image GC:    not triggered (%d%% < high %d%%)", p.ImageGC.UsagePercent, high)
		if p.Policy.Image.MaxAge > 0 {
			fmt.Fprintf(b, "; MaxAge %s pass frees %s", p.Policy.Image.MaxAge, format.Bytes(p.ImageGC.BytesFreed))
		}
		b.WriteByte('\n')
	}
}

// gauge draws usage as a bar of gaugeWidth cells with the low (L) and high
// (H) thresholds marked on it.
func gauge(usage, low, high int) string {
	cell := func(pct int) int { return min(max(pct, 0), 100) * gaugeWidth / 100 }
	bar := make([]rune, gaugeWidth)
	filled := cell(usage)
	for i := range bar {
		bar[i] = '·'
		if i < filled {
			bar[i] = '█'
		}
	}
	mark := func(pct int, r rune) { bar[min(cell(pct), gaugeWidth-1)] = r }
	mark(low, 'L')
	mark(high, 'H')
	return "[" + string(bar) + "]"
}

// renderDiskReserve prints nodegc's check of the old diskSpaceManager
// threshold and the evictionHard signals beside it. The reserve is
// labelled as nodegc's own check: current kubelets have no
// diskSpaceManager, so no kubelet says "out of disk" from it.
func renderDiskReserve(b *bytes.Buffer, d engine.DiskReserve) {
	fs := func(r *engine.FsReserve) string {
		if r == nil {
			return "unknown"
		}
		verdict := "ok"
		if !r.OK {
			verdict = fmt.Sprintf("BELOW %d MiB", d.ThresholdMiB)
		}
		s := fmt.Sprintf("%s, %s available", verdict, format.Bytes(r.AvailableBytes))
		if r.Error != "" {
			s += " (" + r.Error + ")"
		}
		return s
	}
	fmt.Fprintf(b, "Disk reserve: nodegc's check of the old kubelet diskSpaceManager threshold (--low-diskspace-threshold-mb %d), which current kubelets do not check\n",
		d.ThresholdMiB)
	fmt.Fprintf(b, "  image fs %s; root fs %s\n", fs(&d.ImageFs), fs(d.RootFs))
	if len(d.Eviction) == 0 {
		return
	}
	tw := texttable.NewTable(b)
	fmt.Fprintln(tw, "  EVICTION SIGNAL\tHARD THRESHOLD\tAVAILABLE\tCROSSED")
	for _, e := range d.Eviction {
		crossed := "no"
		if e.Crossed {
			crossed = "YES"
		}
		amount := format.Bytes
		if e.Inodes {
			amount = func(n int64) string { return fmt.Sprintf("%d inodes", n) }
		}
		signal := e.Signal
		if d.RootFs == nil && strings.HasPrefix(signal, "nodefs.") {
			// Without the root fs, the engine reads nodefs on the image fs.
			signal += " (of the image fs: root fs unknown)"
		}
		fmt.Fprintf(tw, "  %s\t%s (%s)\t%s\t%s\n", signal, e.Threshold, amount(e.ThresholdAmount), amount(e.Available), crossed)
	}
	tw.Flush()
}

// renderEvents prints the plan's kubelet-style events.
func renderEvents(b *bytes.Buffer, p engine.Plan) {
	events := p.ImageGC.Events
	fmt.Fprintf(b, "Events (%d):\n", len(events))
	if len(events) == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	for _, e := range events {
		kind := "Normal"
		if e.Warning {
			kind = "Warning"
		}
		fmt.Fprintf(b, "  %s %s: %s\n", kind, e.Reason, e.Message)
	}
}

// planSummary is the one-line total of what the plan removes; gc shows it
// before asking for confirmation.
func planSummary(p engine.Plan) string {
	n := planItems(p)
	if n == 0 {
		return "Plan: nothing to remove."
	}
	return fmt.Sprintf("Plan: remove %s (%s), %s, %s, %s.",
		format.Plural(len(p.ImageGC.Remove), "image"), format.Bytes(p.ImageGC.BytesFreed),
		format.Plural(len(p.ContainerGC.Remove), "dead container"),
		format.Plural(len(p.SandboxGC.Remove), "sandbox"),
		format.Plural(len(p.LogGC.Remove), "log path"))
}

// planItems counts the items a plan removes.
func planItems(p engine.Plan) int {
	return len(p.ImageGC.Remove) + len(p.ContainerGC.Remove) + len(p.SandboxGC.Remove) + len(p.LogGC.Remove)
}

// shortState drops the CRI prefix: CONTAINER_EXITED is EXITED.
func shortState(s engine.ContainerState) string {
	if strings.HasPrefix(string(s), "SANDBOX_") {
		return engine.SandboxState(s).Short()
	}
	return s.Short()
}

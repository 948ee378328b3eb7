package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nodegc/nodegc/engine"
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
}

// gaugeWidth is the number of cells in the image filesystem gauge; one
// cell is 2.5%.
const gaugeWidth = 40

// cutSentinel marks the cut-line row while the tabwriter aligns the image
// table; it is replaced by the full-width cut line afterwards.
const cutSentinel = "\x1e"

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
	out := b.Bytes()
	if v.Width > 0 {
		out = fitLines(out, v.Width)
	}
	_, err := w.Write(out)
	return err
}

// fitLines cuts every line of text longer than width columns to width,
// its last column an ellipsis.
func fitLines(text []byte, width int) []byte {
	out := make([]byte, 0, len(text))
	for line := range bytes.Lines(text) {
		body := bytes.TrimSuffix(line, []byte("\n"))
		if utf8.RuneCount(body) > width {
			n, i := 0, 0
			for i < len(body) && n < width-1 {
				_, size := utf8.DecodeRune(body[i:])
				i += size
				n++
			}
			body = append(body[:i:i], "…"...)
		}
		out = append(out, body...)
		if len(body) != len(line) || bytes.HasSuffix(line, []byte("\n")) {
			out = append(out, '\n')
		}
	}
	return out
}

// includesImages reports whether a pass of the kind runs image GC.
func includesImages(k engine.PassKind) bool { return k != engine.PassContainers }

// includesContainers reports whether a pass of the kind runs container GC.
func includesContainers(k engine.PassKind) bool { return k != engine.PassImages }

// renderSettings prints the effective policy: each value and where it came
// from.
func renderSettings(b *bytes.Buffer, prov provenance) {
	fmt.Fprintln(b, "Effective policy:")
	tw := newTable(b)
	var long []setting
	for _, s := range prov {
		if s.Name == settingEvictionHard {
			long = append(long, s) // too wide for the value column
			continue
		}
		fmt.Fprintf(tw, "  --%s\t%s\t%s\n", s.Name, s.Value, s.Source)
	}
	tw.flush()
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
		fmtTime(s.TakenAt), fmtTime(p.EvaluatedAt), p.Pass)

	fs := s.ImageFs
	mount := cmp.Or(fs.Mountpoint, "(unknown mountpoint)")
	if fs.CapacityBytes <= 0 {
		fmt.Fprintf(b, "Image fs:    %s  capacity %d: cannot compute usage\n", mount, fs.CapacityBytes)
		return
	}
	high, low := p.Policy.Image.HighThresholdPercent, p.Policy.Image.LowThresholdPercent
	fmt.Fprintf(b, "Image fs:    %s  %s %d%% used  (low %d%% L, high %d%% H)\n",
		mount, gauge(p.ImageGC.UsagePercent, low, high), p.ImageGC.UsagePercent, low, high)
	fmt.Fprintf(b, "             %s available of %s\n", humanBytes(fs.AvailableBytes), humanBytes(fs.CapacityBytes))
	switch {
	case !includesImages(p.Pass):
	case p.Pass == engine.PassReclaimAll:
		fmt.Fprintf(b, "Image GC:    reclaim-all: every unused image older than %s goes, whatever the thresholds\n", p.Policy.Image.MinAge)
	case p.ImageGC.Triggered:
		fmt.Fprintf(b, "Image GC:    triggered (%d%% >= high %d%%): %s to free to reach low %d%%, plan frees %s\n",
			p.ImageGC.UsagePercent, high, humanBytes(p.ImageGC.BytesToFree), low, humanBytes(p.ImageGC.BytesFreed))
	default:
		fmt.Fprintf(b, "Image GC:    not triggered (%d%% < high %d%%)", p.ImageGC.UsagePercent, high)
		if p.Policy.Image.MaxAge > 0 {
			fmt.Fprintf(b, "; MaxAge %s pass frees %s", p.Policy.Image.MaxAge, humanBytes(p.ImageGC.BytesFreed))
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

// renderImages prints the engine's image rows in eviction order, with
// the cut line.
func renderImages(b *bytes.Buffer, v planView) {
	rows, cut := engine.ExplainImages(v.Snapshot, v.Plan)
	at := v.Plan.EvaluatedAt
	fmt.Fprintf(b, "Images (%d, in eviction order: least recently used first):\n", len(rows))
	g := newGrid(8, len(rows)+2)
	for _, h := range []string{"  #", "IMAGE", "ID", "SIZE", "LAST USED", "FIRST SEEN", "STATUS", "DETAIL"} {
		g.cell(h)
	}
	sentinel := func() {
		g.cell(cutSentinel)
		for range 7 {
			g.end()
		}
	}
	for i, r := range rows {
		if i == cut.Row {
			sentinel()
		}
		g.add("  ")
		g.buf = strconv.AppendInt(g.buf, int64(r.Rank), 10)
		g.end()
		g.cell(r.Name)
		g.cell(shortID(r.Image.ID))
		g.buf = appendHumanBytes(g.buf, r.Image.SizeBytes)
		g.end()
		if r.LastUsed != nil {
			g.buf = appendAgo(g.buf, at, *r.LastUsed)
		} else {
			g.add("never")
		}
		g.end()
		if r.FirstDetected != nil {
			g.buf = appendAgo(g.buf, at, *r.FirstDetected)
		} else {
			g.add("now (new)")
		}
		g.end()
		switch {
		case r.Action == engine.ActionRemove:
			g.add("remove #")
			g.buf = strconv.AppendInt(g.buf, int64(r.Step), 10)
			g.add(" ")
		case r.Reason != "":
			g.add("keep ")
		default:
			g.add("-")
		}
		g.cell(r.Reason)
		g.cell(r.Detail)
	}
	if cut.Row == len(rows) {
		sentinel()
	}
	var tb bytes.Buffer
	g.writeTo(&tb)
	writeCutLine(b, tb.Bytes(), cut.Text)
}

// writeCutLine writes the aligned table to b with the sentinel row
// swapped for the cut line, as wide as the table.
func writeCutLine(b *bytes.Buffer, table []byte, text string) {
	width := 0
	for line := range bytes.Lines(table) {
		if !bytes.HasPrefix(line, []byte(cutSentinel)) {
			width = max(width, utf8.RuneCount(bytes.TrimRight(line, " \n")))
		}
	}
	b.Grow(len(table) + len(text) + 3*width)
	for line := range bytes.Lines(table) {
		if !bytes.HasPrefix(line, []byte(cutSentinel)) {
			b.Write(bytes.TrimRight(line, " \n"))
			b.WriteByte('\n')
			continue
		}
		cut := "  ──── " + text + " "
		b.WriteString(cut)
		if pad := width - utf8.RuneCountInString(cut); pad > 0 {
			b.WriteString(strings.Repeat("─", pad))
		} else {
			b.WriteString("────")
		}
		b.WriteByte('\n')
	}
}

// renderContainers prints the engine's rows of dead (not running)
// containers, grouped by pod and container name, newest first, with what
// the plan does to each. A full plan can list 100,000 of them: the cells
// go into one buffer, aligned by a grid instead of a tabwriter.
func renderContainers(b *bytes.Buffer, v planView) {
	rows := engine.ExplainContainers(v.Snapshot, v.Plan)
	at := v.Plan.EvaluatedAt
	finishedCol, pods := false, 0 // FINISHED only when the runtime gave exit details
	for i, r := range rows {
		finishedCol = finishedCol || r.FinishedAt != nil
		if i == 0 || rows[i-1].Pod != r.Pod {
			pods++
		}
	}
	fmt.Fprintf(b, "Dead containers (%d, %d to remove), by pod and container, newest first:\n", len(rows), len(v.Plan.ContainerGC.Remove))
	if len(rows) == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	header := []string{"  POD / CONTAINER", "ID", "ATTEMPT", "STATE", "CREATED", "FINISHED", "ACTION", "DETAIL"}
	if !finishedCol {
		header = slices.Delete(header, 5, 6)
	}
	g := newGrid(len(header), len(rows)+pods+1)
	for _, h := range header {
		g.cell(h)
	}
	for i, r := range rows {
		if i == 0 || rows[i-1].Pod != r.Pod {
			g.add("  ")
			g.cell(r.Pod)
			for range len(header) - 1 {
				g.end()
			}
		}
		g.add("    ")
		g.cell(cmp.Or(r.Name, "(unnamed)"))
		g.cell(shortID(r.ID))
		g.buf = strconv.AppendUint(g.buf, uint64(r.Attempt), 10)
		g.end()
		g.cell(shortState(r.State))
		if r.CreatedAt.IsZero() {
			g.add("-")
		} else {
			g.buf = appendAgo(g.buf, at, r.CreatedAt)
		}
		g.end()
		if finishedCol {
			if r.FinishedAt == nil {
				g.add("-")
			} else {
				g.buf = appendAgo(g.buf, at, *r.FinishedAt)
			}
			g.end()
		}
		if r.Action != engine.ActionRemove {
			g.cell("keep")
			g.end()
			continue
		}
		g.add("remove #")
		g.buf = strconv.AppendInt(g.buf, int64(r.Step), 10)
		g.add(" ")
		g.cell(r.Reason)
		g.cell(r.Detail)
	}
	g.writeTo(b)
}

// renderSandboxes prints the sandboxes the plan stops and removes.
func renderSandboxes(b *bytes.Buffer, v planView) {
	rm := v.Plan.SandboxGC.Remove
	fmt.Fprintf(b, "Sandboxes to remove (%d):\n", len(rm))
	if len(rm) == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	tw := newTable(b)
	fmt.Fprintln(tw, "  #\tID\tPOD\tSTATE\tREASON")
	for _, r := range engine.ExplainSandboxes(v.Snapshot, v.Plan) {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", r.Step, shortID(r.ID), r.Pod, cmp.Or(shortState(engine.ContainerState(r.State)), "-"), r.Reason)
	}
	tw.flush()
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
	tw := newTable(b)
	for _, r := range rm {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Path, r.Reason)
	}
	tw.flush()
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
		s := fmt.Sprintf("%s, %s available", verdict, humanBytes(r.AvailableBytes))
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
	tw := newTable(b)
	fmt.Fprintln(tw, "  EVICTION SIGNAL\tHARD THRESHOLD\tAVAILABLE\tCROSSED")
	for _, e := range d.Eviction {
		crossed := "no"
		if e.Crossed {
			crossed = "YES"
		}
		amount := humanBytes
		if e.Inodes {
			amount = func(n int64) string { return fmt.Sprintf("%d inodes", n) }
		}
		fmt.Fprintf(tw, "  %s\t%s (%s)\t%s\t%s\n", e.Signal, e.Threshold, amount(e.ThresholdAmount), amount(e.Available), crossed)
	}
	tw.flush()
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
		plural(len(p.ImageGC.Remove), "image"), humanBytes(p.ImageGC.BytesFreed),
		plural(len(p.ContainerGC.Remove), "dead container"),
		plural(len(p.SandboxGC.Remove), "sandbox"),
		plural(len(p.LogGC.Remove), "log path"))
}

// planItems counts the items a plan removes.
func planItems(p engine.Plan) int {
	return len(p.ImageGC.Remove) + len(p.ContainerGC.Remove) + len(p.SandboxGC.Remove) + len(p.LogGC.Remove)
}

// renderReport prints what a pass did, item outcomes and bytes freed.
func renderReport(w io.Writer, r engine.PassReport) {
	var b bytes.Buffer
	title := "Pass"
	if r.DryRun {
		title = "Dry run"
	}
	fmt.Fprintf(&b, "%s %d (%s): %d removed, %d already gone, %d skipped, %d failed, %d planned\n",
		title, r.ID, r.Kind, r.Count(engine.OutcomeRemoved), r.Count(engine.OutcomeGone),
		r.Count(engine.OutcomeSkipped), r.Count(engine.OutcomeFailed), r.Count(engine.OutcomePlanned))
	if !r.DryRun {
		measured := "not measured"
		if r.MeasuredBytesFreed != nil {
			measured = humanBytes(*r.MeasuredBytesFreed)
		}
		fmt.Fprintf(&b, "Image bytes freed: %s estimated (runtime sizes), %s measured on the image fs\n",
			humanBytes(r.EstimatedBytesFreed), measured)
	}
	for _, it := range r.Items {
		switch it.Outcome {
		case engine.OutcomeFailed:
			fmt.Fprintf(&b, "  failed  %s %s: %s\n", it.Kind, shortID(it.ID), it.Error)
		case engine.OutcomeSkipped:
			fmt.Fprintf(&b, "  skipped %s %s: %s\n", it.Kind, shortID(it.ID), it.Detail)
		}
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	w.Write(b.Bytes())
}

// shortID is the first 12 characters of an ID without its algorithm.
func shortID(id string) string {
	if i := strings.Index(id, ":"); i >= 0 {
		id = id[i+1:]
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// shortState drops the CRI prefix: CONTAINER_EXITED is EXITED.
func shortState(s engine.ContainerState) string {
	if strings.HasPrefix(string(s), "SANDBOX_") {
		return engine.SandboxState(s).Short()
	}
	return s.Short()
}

// humanBytes formats a byte count in IEC units with one decimal.
func humanBytes(n int64) string { return string(appendHumanBytes(nil, n)) }

// appendHumanBytes appends humanBytes(n) to dst.
func appendHumanBytes(dst []byte, n int64) []byte {
	size := uint64(n) // the magnitude: -n overflows for the least int64
	if n < 0 {
		dst = append(dst, '-')
		size = -size
	}
	if size < 1024 {
		return append(strconv.AppendUint(dst, size, 10), " B"...)
	}
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(size) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	dst = strconv.AppendFloat(dst, v, 'f', 1, 64)
	return append(append(dst, ' '), units[u]...)
}

// ago formats t relative to now: "3h10m ago", or "in 5m" for the future.
func ago(now, t time.Time) string { return string(appendAgo(nil, now, t)) }

// appendAgo appends ago(now, t) to dst.
func appendAgo(dst []byte, now, t time.Time) []byte {
	d := now.Sub(t)
	if d < 0 {
		return appendShortDuration(append(dst, "in "...), -d)
	}
	return append(appendShortDuration(dst, d), " ago"...)
}

// shortDuration keeps the two largest units: 45s, 12m5s, 3h10m, 2d4h.
func shortDuration(d time.Duration) string { return string(appendShortDuration(nil, d)) }

// appendShortDuration appends shortDuration(d) to dst.
func appendShortDuration(dst []byte, d time.Duration) []byte {
	d = d.Round(time.Second)
	units := [...]struct {
		size time.Duration
		name byte
	}{{24 * time.Hour, 'd'}, {time.Hour, 'h'}, {time.Minute, 'm'}, {time.Second, 's'}}
	for i, u := range units[:len(units)-1] {
		if d >= u.size {
			next := units[i+1]
			dst = append(strconv.AppendInt(dst, int64(d/u.size), 10), u.name)
			return append(strconv.AppendInt(dst, int64(d%u.size/next.size), 10), next.name)
		}
	}
	return append(strconv.AppendInt(dst, int64(d/time.Second), 10), 's')
}

// fmtTime formats a time for the table, UTC, to the second.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "x") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// table is a tabwriter whose lines lose the padding tabwriter leaves after
// their last cell.
type table struct {
	out *bytes.Buffer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(out *bytes.Buffer) *table {
	t := &table{out: out}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// flush aligns the rows and appends them to the output.
func (t *table) flush() {
	t.tw.Flush()
	for line := range bytes.Lines(t.buf.Bytes()) {
		t.out.Write(bytes.TrimRight(line, " \n"))
		t.out.WriteByte('\n')
	}
	t.buf.Reset()
}

// grid aligns rows of cells the way table does (each cell padded to the
// widest of its column plus two spaces, no blanks at the end of a line)
// without a tabwriter: the dead containers table can have 100,000 rows,
// and a tabwriter keeps a cell struct per cell and writes padding a cell
// at a time. The cells go one after the other into one buffer; a row is
// the next ncol cells.
type grid struct {
	ncol  int
	buf   []byte // the text of every cell
	ends  []int  // where each cell ends in buf
	width []int  // the widest cell of each column, in runes
	ascii bool   // every cell is ASCII, so a cell's width is its length
	plain bool   // no cell holds a byte a tabwriter gives a meaning to
}

// newGrid starts a grid of ncol columns with room for about rows rows.
func newGrid(ncol, rows int) *grid {
	return &grid{
		ncol:  ncol,
		buf:   make([]byte, 0, rows*ncol*8),
		ends:  make([]int, 0, rows*ncol),
		width: make([]int, ncol),
		ascii: true,
		plain: true,
	}
}

// add appends s to the current cell.
func (g *grid) add(s string) { g.buf = append(g.buf, s...) }

// cell appends s to the current cell and ends it.
func (g *grid) cell(s string) {
	g.add(s)
	g.end()
}

// end ends the current cell: the text appended since the last end.
func (g *grid) end() {
	start := 0
	if n := len(g.ends); n > 0 {
		start = g.ends[n-1]
	}
	text := g.buf[start:]
	ascii := true
	for _, c := range text {
		if c >= ' ' && c < utf8.RuneSelf {
			continue
		}
		switch c {
		case '\t', '\n', '\v', '\f', tabwriter.Escape:
			g.plain = false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	w := len(text)
	if !ascii {
		w = utf8.RuneCount(text)
		g.ascii = false
	}
	col := len(g.ends) % g.ncol
	g.width[col] = max(g.width[col], w)
	g.ends = append(g.ends, len(g.buf))
}

// spaces is padding to copy from.
const spaces = "                                                                "

// writeTo appends the aligned rows to b, byte for byte what table writes
// for the same cells. Cells holding tabs, line breaks or the tabwriter
// escape go through a table, which gives those bytes their meaning.
func (g *grid) writeTo(b *bytes.Buffer) {
	if len(g.ends)%g.ncol != 0 {
		panic(fmt.Sprintf("grid: %d cells do not make rows of %d", len(g.ends), g.ncol))
	}
	var line []byte
	if !g.plain {
		t := newTable(b)
		start := 0
		for i, end := range g.ends {
			line = append(line, g.buf[start:end]...)
			start = end
			if i%g.ncol < g.ncol-1 {
				line = append(line, '\t')
				continue
			}
			t.Write(append(line, '\n'))
			line = line[:0]
		}
		t.flush()
		return
	}
	rowMax := 0
	for _, w := range g.width {
		rowMax += w + 2
	}
	b.Grow(len(g.buf) + len(g.ends)/g.ncol*(rowMax+1))
	line = make([]byte, 0, 4*rowMax)
	start := 0
	for i, end := range g.ends {
		text := g.buf[start:end]
		start = end
		line = append(line, text...)
		if col := i % g.ncol; col < g.ncol-1 {
			w := len(text)
			if !g.ascii {
				w = utf8.RuneCount(text)
			}
			for pad := g.width[col] + 2 - w; pad > 0; pad -= len(spaces) {
				line = append(line, spaces[:min(pad, len(spaces))]...)
			}
			continue
		}
		b.Write(bytes.TrimRight(line, " "))
		b.WriteByte('\n')
		line = line[:0]
	}
}

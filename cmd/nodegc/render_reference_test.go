package main

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// This file keeps the tabwriter implementation of the dead containers
// table that renderContainers replaced, as the reference the faster one
// must match byte for byte.

// referenceContainers is renderContainers as it was before the grid: a
// sort that follows pointers, a tabwriter, fmt for every duration.
func referenceContainers(b *bytes.Buffer, v planView) {
	p, s := v.Plan, v.Snapshot
	removeAt := make(map[string]int, len(p.ContainerGC.Remove))
	for i, r := range p.ContainerGC.Remove {
		removeAt[r.ID] = i
	}
	var dead []*engine.Container
	planned := make([]bool, len(p.ContainerGC.Remove)) // removals found in the snapshot
	for i := range s.Containers {
		c := &s.Containers[i]
		if c.State == engine.ContainerRunning {
			continue
		}
		dead = append(dead, c)
		if n, ok := removeAt[c.ID]; ok {
			planned[n] = true
		}
	}
	for n, r := range p.ContainerGC.Remove { // removals the snapshot lacks
		if !planned[n] {
			dead = append(dead, &engine.Container{ID: r.ID, PodUID: r.PodUID, Name: r.Name, PodSandboxID: r.PodSandboxID, Attempt: r.Attempt, State: r.State})
		}
	}
	// Sort rows by precomputed keys, pods by their rank among the pod
	// names: comparing 100,000 containers by looking up and comparing
	// their pods in the comparator costs more than planning them.
	pods := podNames(s.Sandboxes)
	type row struct {
		pod  string
		rank int
		c    *engine.Container
	}
	rows := make([]row, len(dead))
	rank := make(map[string]int)
	for i, c := range dead {
		pod, ok := pods[c.PodSandboxID]
		if !ok {
			if pod, ok = pods[c.PodUID]; !ok {
				pod = "pod " + cmp.Or(c.PodUID, "(no uid)")
			}
		}
		rows[i] = row{pod: pod, c: c}
		rank[pod] = 0
	}
	names := make([]string, 0, len(rank))
	for pod := range rank {
		names = append(names, pod)
	}
	slices.Sort(names)
	for i, pod := range names {
		rank[pod] = i
	}
	for i := range rows {
		rows[i].rank = rank[rows[i].pod]
	}
	slices.SortFunc(rows, func(x, y row) int {
		a, b := x.c, y.c
		return cmp.Or(
			cmp.Compare(x.rank, y.rank),
			cmp.Compare(a.Name, b.Name),
			b.CreatedAt.Compare(a.CreatedAt),
			cmp.Compare(b.Attempt, a.Attempt),
			cmp.Compare(a.ID, b.ID),
		)
	})
	fmt.Fprintf(b, "Dead containers (%d, %d to remove), by pod and container, newest first:\n", len(dead), len(p.ContainerGC.Remove))
	if len(dead) == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	// FINISHED only when the runtime gave exit details for some container.
	finishedCol := slices.ContainsFunc(dead, func(c *engine.Container) bool { return c.FinishedAt != nil })
	tw := &referenceTable{out: b}
	tw.tw = tabwriter.NewWriter(&tw.buf, 0, 0, 2, ' ', 0)
	line := func(cells ...string) {
		if !finishedCol {
			cells = slices.Delete(cells, 5, 6)
		}
		tw.Write([]byte(strings.Join(cells, "\t") + "\n"))
	}
	line("  POD / CONTAINER", "ID", "ATTEMPT", "STATE", "CREATED", "FINISHED", "ACTION", "DETAIL")
	lastPod := ""
	for _, r := range rows {
		c := r.c
		if r.pod != lastPod {
			line("  "+r.pod, "", "", "", "", "", "", "")
			lastPod = r.pod
		}
		created, finished := "-", "-"
		if !c.CreatedAt.IsZero() {
			created = referenceAgo(p.EvaluatedAt, c.CreatedAt)
		}
		if c.FinishedAt != nil {
			finished = referenceAgo(p.EvaluatedAt, *c.FinishedAt)
		}
		action, detail := "keep", ""
		if n, ok := removeAt[c.ID]; ok {
			r := p.ContainerGC.Remove[n]
			action, detail = "remove #"+strconv.Itoa(n+1)+" "+string(r.Reason), r.Detail
		}
		line("    "+cmp.Or(c.Name, "(unnamed)"), shortID(c.ID), strconv.FormatUint(uint64(c.Attempt), 10), shortState(c.State), created, finished, action, detail)
	}
	tw.flush()
}

// referenceTable is table as it was.
type referenceTable struct {
	out *bytes.Buffer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func (t *referenceTable) Write(p []byte) (int, error) { return t.tw.Write(p) }

func (t *referenceTable) flush() {
	t.tw.Flush()
	for line := range bytes.Lines(t.buf.Bytes()) {
		t.out.Write(bytes.TrimRight(line, " \n"))
		t.out.WriteByte('\n')
	}
	t.buf.Reset()
}

// referenceAgo is ago as it was.
func referenceAgo(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		return "in " + referenceShortDuration(-d)
	}
	return referenceShortDuration(d) + " ago"
}

// referenceShortDuration is shortDuration as it was.
func referenceShortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	day := 24 * time.Hour
	switch {
	case d >= day:
		return fmt.Sprintf("%dd%dh", d/day, (d%day)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", d/time.Minute, (d%time.Minute)/time.Second)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// generatedView is a node of pods pods with dead containers of every kind
// the table must order and format: pods without a sandbox or a UID,
// unnamed containers, equal creation times told apart by attempt, zero
// and future times, sub-second times, removals in plan order, removals
// the snapshot lacks, details with trailing blanks, running containers
// mixed in. Some seeds are rendered for every case; none gives exit
// details (finished adds them).
func generatedView(seed uint64, pods int) planView {
	rng := rand.New(rand.NewPCG(seed, 1))
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	names := []string{"app", "sidecar", "init", "", "log-shipper", "a"}
	reasons := []engine.ContainerRemoveReason{engine.RemoveNodeLimit, engine.RemovePerContainerLimit}
	details := []string{"node limit", "each container keeps its newest 1 dead", "", "ends in blanks  "}
	var s engine.Snapshot
	var removals []engine.ContainerRemoval
	for i := range pods {
		uid := fmt.Sprintf("uid-%04d", rng.IntN(pods)) // pods sharing a UID share a name
		sb := fmt.Sprintf("sb%05d%s", i, strings.Repeat("x", 10))
		switch rng.IntN(10) {
		case 0: // no sandbox: the pod is its UID
		case 1:
			uid = "" // no sandbox, no UID
		default:
			s.Sandboxes = append(s.Sandboxes, engine.Sandbox{ID: sb, PodUID: uid, PodName: fmt.Sprintf("pod-%d", rng.IntN(pods)), PodNamespace: "ns" + strconv.Itoa(rng.IntN(3))})
		}
		for k := range 1 + rng.IntN(12) {
			c := engine.Container{
				ID:           fmt.Sprintf("c%05d-%02d-%s", i, k, strings.Repeat("f", rng.IntN(12))),
				PodSandboxID: sb, PodUID: uid,
				Name:    names[rng.IntN(len(names))],
				Attempt: uint32(rng.IntN(4)),
				State:   []engine.ContainerState{engine.ContainerExited, engine.ContainerExited, engine.ContainerUnknown, engine.ContainerCreated, engine.ContainerRunning}[rng.IntN(5)],
			}
			switch rng.IntN(12) {
			case 0: // zero: shown as "-"
			case 1:
				c.CreatedAt = at.Add(time.Duration(rng.IntN(600)) * time.Second) // future
			case 2:
				c.CreatedAt = at.Add(-time.Hour) // ties on time, told apart by attempt and ID
			case 3:
				c.CreatedAt = at.Add(-2*time.Hour + time.Duration(rng.IntN(3))*time.Millisecond) // ties on the second
			default:
				c.CreatedAt = at.Add(-time.Duration(rng.Int64N(int64(40 * 24 * time.Hour))))
			}
			s.Containers = append(s.Containers, c)
			if c.State != engine.ContainerRunning && rng.IntN(2) == 0 {
				removals = append(removals, engine.ContainerRemoval{ID: c.ID, PodUID: uid, Name: c.Name, Reason: reasons[rng.IntN(2)], Detail: details[rng.IntN(len(details))]})
			}
		}
	}
	for i := range 5 { // removals the snapshot lacks
		removals = append(removals, engine.ContainerRemoval{ID: fmt.Sprintf("gone-%d", i), PodUID: fmt.Sprintf("uid-%04d", i), PodSandboxID: "gone", Name: names[i], Attempt: uint32(i), Reason: engine.RemoveNodeLimit, State: engine.ContainerExited})
	}
	rng.Shuffle(len(removals), func(i, j int) { removals[i], removals[j] = removals[j], removals[i] })
	return planView{Snapshot: s, Plan: engine.Plan{EvaluatedAt: at, Pass: engine.PassFull, ContainerGC: engine.ContainerPlan{Remove: removals}}}
}

func TestRenderContainersMatchesTabwriter(t *testing.T) {
	finished := func(v *planView) {
		for i := range v.Snapshot.Containers {
			if i%3 != 0 {
				f := v.Plan.EvaluatedAt.Add(-time.Duration(i) * time.Minute)
				v.Snapshot.Containers[i].FinishedAt = &f
			}
		}
	}
	rename := func(every int, name string) func(*planView) {
		return func(v *planView) {
			for i := 0; i < len(v.Snapshot.Containers); i += every {
				v.Snapshot.Containers[i].Name = name
			}
		}
	}
	tests := []struct {
		name   string
		pods   int
		mutate func(*planView)
		grid   bool // the grid aligns it, not the tabwriter fallback
	}{
		{name: "a generated node without exit details has no FINISHED column", pods: 400, grid: true},
		{name: "exit details on some containers add the FINISHED column", pods: 400, mutate: finished, grid: true},
		{name: "non-ASCII names are padded by runes, not bytes", pods: 200, mutate: rename(7, "日本-é"), grid: true},
		{name: "sandboxes without names leave pods named by UID", pods: 200, mutate: func(v *planView) {
			for i := range v.Snapshot.Sandboxes {
				if i%2 == 0 {
					v.Snapshot.Sandboxes[i].PodName = ""
				}
			}
		}, grid: true},
		{name: "a very long detail pads nothing after it", pods: 50, mutate: func(v *planView) {
			v.Plan.ContainerGC.Remove[0].Detail = strings.Repeat("long ", 40)
		}, grid: true},
		{name: "a very long name pads the next cell with more blanks than one copy", pods: 50, mutate: rename(5, strings.Repeat("n", 150)), grid: true},
		{name: "a tab in a name is a cell break, as the tabwriter made it", pods: 50, mutate: rename(11, "a\tb")},
		{name: "a line break in a detail splits the table, as the tabwriter did", pods: 50, mutate: func(v *planView) {
			v.Plan.ContainerGC.Remove[3].Detail = "two\nlines"
		}},
		{name: "the tabwriter escape byte in a name is kept as the tabwriter kept it", pods: 50, mutate: rename(13, "x\xffy\xffz")},
		{name: "only removals the snapshot lacks", pods: 0, grid: true},
		{name: "no dead containers says none", pods: 0, mutate: func(v *planView) { v.Plan.ContainerGC.Remove = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(3) {
				v := generatedView(seed, tt.pods)
				if tt.mutate != nil {
					tt.mutate(&v)
				}
				var got, want bytes.Buffer
				renderContainers(&got, v)
				referenceContainers(&want, v)
				if got.String() != want.String() {
					t.Fatalf("seed %d: %s", seed, diffLines(got.String(), want.String()))
				}
				if tt.grid != gridPlain(v) {
					t.Errorf("seed %d: aligned by the grid %v, want %v", seed, !tt.grid, tt.grid)
				}
			}
		})
	}
}

// gridPlain reports whether the view's dead containers are all cells the
// grid aligns itself (it has rows, and no byte the tabwriter interprets).
func gridPlain(v planView) bool {
	g := newGrid(1, 0)
	for _, c := range v.Snapshot.Containers {
		g.cell(c.Name)
	}
	for _, r := range v.Plan.ContainerGC.Remove {
		g.cell(r.Name)
		g.cell(r.Detail)
	}
	return g.plain && len(g.ends) > 0
}

func TestAgoMatchesFmt(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	durations := []time.Duration{0, 499 * time.Millisecond, 500 * time.Millisecond, time.Second, 59*time.Second + 600*time.Millisecond,
		time.Hour - 1, 25 * time.Hour, 1000 * 24 * time.Hour, 1<<63 - 1, -1 << 63}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		durations = append(durations, time.Duration(rng.Int64N(int64(100*24*time.Hour)))-50*24*time.Hour)
	}
	for _, d := range durations {
		if got, want := shortDuration(d), referenceShortDuration(d); got != want {
			t.Errorf("shortDuration(%d) = %q, fmt gave %q", d, got, want)
		}
		if got, want := ago(now, now.Add(-d)), referenceAgo(now, now.Add(-d)); got != want {
			t.Errorf("ago(now, now-%d) = %q, fmt gave %q", d, got, want)
		}
	}
}

// referenceImages is renderImages as it was before the grid.
func referenceImages(b *bytes.Buffer, v planView) {
	p, s := v.Plan, v.Snapshot
	images := make(map[string]engine.Image, len(s.Images))
	for _, img := range s.Images {
		images[img.ID] = img
	}
	records := make(map[string]engine.ImageRecord, len(s.ImageRecords))
	for _, r := range s.ImageRecords {
		records[r.ID] = r
	}
	removeAt := make(map[string]int, len(p.ImageGC.Remove))
	for i, r := range p.ImageGC.Remove {
		removeAt[r.ID] = i
	}
	keeps := make(map[string]engine.ImageKeep, len(p.ImageGC.Keep))
	for _, k := range p.ImageGC.Keep {
		keeps[k.ID] = k
	}
	order := imageOrder(p, s)
	fmt.Fprintf(b, "Images (%d, in eviction order: least recently used first):\n", len(order))

	cut, cutText := cutLine(p, order, removeAt)
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tIMAGE\tID\tSIZE\tLAST USED\tFIRST SEEN\tSTATUS\tDETAIL")
	for i, id := range order {
		if i == cut {
			fmt.Fprintln(tw, cutSentinel+"\t\t\t\t\t\t\t")
		}
		img, known := images[id]
		if !known { // a removal the snapshot does not list
			for _, r := range p.ImageGC.Remove {
				if r.ID == id {
					img = engine.Image{ID: id, RepoTags: r.RepoTags, RepoDigests: r.RepoDigests, SizeBytes: r.SizeBytes}
				}
			}
		}
		lastUsed, firstSeen := "never", "now (new)"
		if r, ok := records[id]; ok {
			firstSeen = referenceAgo(p.EvaluatedAt, r.FirstDetected)
			if r.LastUsed != nil {
				lastUsed = referenceAgo(p.EvaluatedAt, *r.LastUsed)
			}
		}
		status, detail := "-", ""
		if n, ok := removeAt[id]; ok {
			r := p.ImageGC.Remove[n]
			status, detail = fmt.Sprintf("remove #%d %s", n+1, r.Reason), r.Detail
		} else if k, ok := keeps[id]; ok {
			status, detail = "keep "+string(k.Reason), k.Detail
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			i+1, imageName(img), shortID(id), referenceHumanBytes(img.SizeBytes), lastUsed, firstSeen, status, detail)
	}
	if cut == len(order) {
		fmt.Fprintln(tw, cutSentinel+"\t\t\t\t\t\t\t")
	}
	tw.Flush()
	b.WriteString(referenceReplaceCutLine(tb.String(), cutText))
}

// referenceReplaceCutLine is replaceCutLine as it was.
func referenceReplaceCutLine(table, text string) string {
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	width := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, cutSentinel) {
			width = max(width, len([]rune(strings.TrimRight(l, " "))))
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, cutSentinel) {
			line := "  ──── " + text + " "
			if pad := width - len([]rune(line)); pad > 0 {
				line += strings.Repeat("─", pad)
			} else {
				line += "────"
			}
			lines[i] = line
		} else {
			lines[i] = strings.TrimRight(l, " ")
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// referenceHumanBytes is humanBytes as it was.
func referenceHumanBytes(n int64) string {
	if n < 0 {
		return "-" + referenceHumanBytes(-n)
	}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// generatedImages is a node of n images of every kind the image table
// formats: tags, digests, no name; sizes from bytes to TiB; records with
// and without a last use, in the future, or missing; removals in plan
// order, kept images with reasons, removals the snapshot lacks, images
// the plan does not mention. The plan is triggered with the cut line in
// the middle.
func generatedImages(seed uint64, n int) planView {
	rng := rand.New(rand.NewPCG(seed, 2))
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	v := planView{Plan: engine.Plan{EvaluatedAt: at, Pass: engine.PassFull, Policy: engine.DefaultPolicy()}}
	s, ig := &v.Snapshot, &v.Plan.ImageGC
	ig.Triggered, ig.UsagePercent, ig.BytesToFree = true, 91, 50*gib
	keepReasons := []engine.ImageKeepReason{engine.KeepInUse, engine.KeepPinned, engine.KeepTooYoung}
	for i := range n {
		id := fmt.Sprintf("sha256:%064x", rng.Uint64())
		img := engine.Image{ID: id, SizeBytes: rng.Int64N(1 << (10 * (1 + rng.IntN(4))))}
		switch rng.IntN(5) {
		case 0:
			img.RepoDigests = []string{fmt.Sprintf("registry.example/app-%d@sha256:%064x", i, rng.Uint64())}
		case 1: // <none>
		case 2:
			img.RepoTags = []string{fmt.Sprintf("app-%d:v%d", i, rng.IntN(100)), "app:latest", "app:stable"}
		default:
			img.RepoTags = []string{fmt.Sprintf("registry.example/team/app-%d:%d", i, rng.IntN(1000))}
		}
		s.Images = append(s.Images, img)
		if rng.IntN(8) > 0 {
			r := engine.ImageRecord{ID: id, FirstDetected: at.Add(-time.Duration(rng.Int64N(int64(30 * 24 * time.Hour))))}
			switch rng.IntN(4) {
			case 0: // never used
			case 1:
				u := at.Add(time.Duration(rng.IntN(90)) * time.Second)
				r.LastUsed = &u
			default:
				u := at.Add(-time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))
				r.LastUsed = &u
			}
			s.ImageRecords = append(s.ImageRecords, r)
		}
		switch rng.IntN(3) {
		case 0:
			ig.Remove = append(ig.Remove, engine.ImageRemoval{ID: id, SizeBytes: img.SizeBytes, Reason: engine.RemoveForSpace, Detail: "usage 91% >= high threshold 85%"})
			ig.BytesFreed += img.SizeBytes
		case 1:
			ig.Keep = append(ig.Keep, engine.ImageKeep{ID: id, Reason: keepReasons[rng.IntN(len(keepReasons))], Detail: fmt.Sprintf("kept for %d reasons", rng.IntN(3))})
		}
		if rng.IntN(10) > 0 { // the rest are images the plan does not mention
			ig.Order = append(ig.Order, id)
		}
	}
	for i := range 3 { // removals the snapshot lacks
		ig.Remove = append(ig.Remove, engine.ImageRemoval{ID: fmt.Sprintf("sha256:gone%d", i), RepoTags: []string{"gone:" + strconv.Itoa(i)}, SizeBytes: int64(i) << 30, Reason: engine.RemoveForSpace})
	}
	ig.CutLine = len(ig.Order) / 2
	return v
}

func TestRenderImagesMatchesTabwriter(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		mutate func(*planView)
	}{
		{name: "a triggered plan of 2,000 images with the cut line in the middle", n: 2000},
		{name: "an untriggered plan puts the cut line on top", n: 300, mutate: func(v *planView) { v.Plan.ImageGC.Triggered = false }},
		{name: "a reclaim-all plan cutting below the last image", n: 300, mutate: func(v *planView) {
			v.Plan.Pass = engine.PassReclaimAll
			v.Plan.ImageGC.CutLine = len(imageOrder(v.Plan, v.Snapshot))
		}},
		{name: "a containers pass has no cut line", n: 100, mutate: func(v *planView) { v.Plan.Pass = engine.PassContainers }},
		{name: "a cut line wider than a narrow table", n: 2, mutate: func(v *planView) {
			v.Plan.ImageGC.Keep, v.Plan.ImageGC.Remove = nil, nil
			for i := range v.Snapshot.Images {
				v.Snapshot.Images[i].RepoTags = []string{"a"}
			}
		}},
		{name: "non-ASCII tags are padded by runes", n: 300, mutate: func(v *planView) {
			for i := 0; i < len(v.Snapshot.Images); i += 9 {
				v.Snapshot.Images[i].RepoTags = []string{"régistry/日本:1"}
			}
		}},
		{name: "a tab in a tag goes through the tabwriter as before", n: 100, mutate: func(v *planView) {
			v.Snapshot.Images[4].RepoTags = []string{"a\tb"}
		}},
		{name: "a line break in a detail goes through the tabwriter as before", n: 100, mutate: func(v *planView) {
			v.Plan.ImageGC.Remove[1].Detail = "two\nlines"
		}},
		{name: "no images", n: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(3) {
				v := generatedImages(seed, tt.n)
				if tt.mutate != nil {
					tt.mutate(&v)
				}
				var got, want bytes.Buffer
				renderImages(&got, v)
				referenceImages(&want, v)
				if got.String() != want.String() {
					t.Fatalf("seed %d: %s", seed, diffLines(got.String(), want.String()))
				}
			}
		})
	}
}

func TestHumanBytesMatchesFmt(t *testing.T) {
	sizes := []int64{0, 1, 1023, 1024, 1025, 1<<20 - 1, 1 << 20, 1<<60 + 1<<59, 1<<63 - 1, -1, -1024, -(1<<63 - 1)}
	rng := rand.New(rand.NewPCG(3, 3))
	for range 5000 {
		n := rng.Int64N(1 << (1 + rng.IntN(62)))
		sizes = append(sizes, n, -n)
	}
	for _, n := range sizes {
		if got, want := humanBytes(n), referenceHumanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, fmt gave %q", n, got, want)
		}
	}
	// The fmt version recursed without end on the least int64.
	if got := humanBytes(math.MinInt64); got != "-8.0 EiB" {
		t.Errorf("humanBytes(MinInt64) = %q, want -8.0 EiB", got)
	}
}

package rules

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/internal/format"
)

// containerKeep words why the plan keeps a dead container of the rank.
func containerKeep(p model.Plan, r model.ContainerRow) (model.ContainerKeepReason, string) {
	why, detail := containerKeepReason(p, r)
	switch why {
	case model.ContainerKeepNotPlanned:
		return why, fmt.Sprintf("container GC is not part of a %s pass", p.Pass)
	case model.ContainerKeepNewest:
		return why, fmt.Sprintf("newest #%d of its pod's %s", r.Rank, cmp.Or(r.Name, "containers"))
	}
	return why, detail
}

// containerKeepReason is containerKeep's reason, and its detail but for
// the not-planned and newest ones, which containerKeep words.
func containerKeepReason(p model.Plan, r model.ContainerRow) (model.ContainerKeepReason, string) {
	minAge := p.Policy.Container.MinAge
	switch {
	case p.Pass == model.PassImages:
		return model.ContainerKeepNotPlanned, ""
	case !IsDead(r.State):
		return model.ContainerKeepActive, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", r.State)
	case r.CreatedAt.After(p.EvaluatedAt.Add(-minAge)): // the planner's newestGCTime
		return model.ContainerKeepTooYoung, "eligible at " + r.CreatedAt.Add(minAge).UTC().Format(time.RFC3339)
	}
	return model.ContainerKeepNewest, ""
}

// Explain explains the plan p made from the snapshot s, row by row. It is
// pure, like the planners: the same snapshot and plan give the same rows.
// To explain what a pass would do, plan with the engine's effective
// policy (Engine.PlanSnapshot), never with the configured one.
func Explain(s model.Snapshot, p model.Plan) model.Explanation {
	pods := displayPods(s.Sandboxes)
	// The image rows and the container rows are made on two cores: both
	// only read the snapshot, the plan and pods.
	var x model.Explanation
	alongside(func() { explainImageSide(&x, s, p, pods) }, func() { explainContainerSide(&x, s, p, pods) })
	return x
}

// explainImageSide fills in x's image rows and cut line. They read only
// the plan's header (pass, evaluation time, policy) and its ImageGC.
func explainImageSide(x *model.Explanation, s model.Snapshot, p model.Plan, pods map[string]string) {
	x.Images, x.Cut = explainImages(s, p, pods)
}

// explainContainerSide fills in x's container, sandbox and log rows.
// They read only the plan's header (pass, evaluation time, policy) and
// its ContainerGC, SandboxGC and LogGC.
func explainContainerSide(x *model.Explanation, s model.Snapshot, p model.Plan, pods map[string]string) {
	x.Containers, x.Sandboxes, x.Logs = explainContainers(s, p, pods), explainSandboxes(s, p, pods), explainLogs(p)
}

// explainLogs is Explain's log rows: one per removal, in the plan's order.
func explainLogs(p model.Plan) []model.LogRow {
	rows := make([]model.LogRow, len(p.LogGC.Remove))
	for i, r := range p.LogGC.Remove {
		rows[i] = model.LogRow{Step: i + 1, Path: r.Path, Action: model.ActionRemove, Reason: r.Reason}
	}
	return rows
}

// PlanExplained is PlanPass, and Explain of its plan made sooner, on
// the goroutines that plan: the image rows as soon as the images are
// planned, while the containers still are; the container rows as soon
// as the containers are planned, beside the sandboxes and logs; the
// sandbox and log rows last. It returns the plan once both halves are
// planned, and explain, which waits for the explanation and returns it,
// the same as Explain(s, plan): meanwhile the plan can be written. Each
// half of the explanation is told from a copy of the plan that holds
// that half's own fields, the only ones it reads (explainImageSide's,
// explainContainerSide's); the image planner and the image rows share
// one ranking of the images, which each would otherwise make alike.
func PlanExplained(s model.Snapshot, p model.Policy, kind model.PassKind, now time.Time) (plan model.Plan, explain func() model.Explanation) {
	head := newPlan(s, p, kind, now)
	images, containers := passSides(s, p, kind, now)
	pods := sync.OnceValue(func() map[string]string { return displayPods(s.Sandboxes) })
	var x model.Explanation
	ip, ix := make(chan model.Plan, 1), make(chan struct{})
	go func() {
		defer close(ix)
		// The planner and the explainer rank the images alike: once.
		r := rankImagesForRows(s, now, pods())
		hp := head
		if images != nil {
			images(&hp, r.entries)
		}
		ip <- hp
		x.Images, x.Cut = explainRankedImages(s, hp, pods(), r)
	}()
	cp, cx := make(chan model.Plan, 1), make(chan struct{})
	go func() {
		defer close(cx)
		rows := make(chan struct{})
		containersPlanned := func(c model.Plan, removedAt []int32) {
			go func() {
				defer close(rows)
				x.Containers = explainContainersAt(s, c, pods(), removedAt)
			}()
		}
		hp := head
		if containers != nil {
			containers(&hp, containersPlanned)
		} else {
			containersPlanned(hp, nil)
		}
		cp <- hp
		x.Sandboxes, x.Logs = explainSandboxes(s, hp, pods()), explainLogs(hp)
		<-rows
	}()
	plan = head
	plan.ImageGC = (<-ip).ImageGC
	c := <-cp
	plan.ContainerGC, plan.SandboxGC, plan.LogGC = c.ContainerGC, c.SandboxGC, c.LogGC
	done := sync.OnceFunc(func() { <-ix; <-cx })
	return plan, func() model.Explanation {
		done()
		return x
	}
}

// ExplainSandboxes is Explain's sandbox rows alone.
func ExplainSandboxes(s model.Snapshot, p model.Plan) []model.SandboxRow {
	return explainSandboxes(s, p, displayPods(s.Sandboxes))
}

// explainSandboxes is ExplainSandboxes with the snapshot's displayPods.
func explainSandboxes(s model.Snapshot, p model.Plan, pods map[string]string) []model.SandboxRow {
	rows := make([]model.SandboxRow, len(p.SandboxGC.Remove))
	for i, r := range p.SandboxGC.Remove {
		rows[i] = model.SandboxRow{Step: i + 1, ID: r.ID, Pod: displayPod(pods, r.ID, r.PodUID), State: r.State, Action: model.ActionRemove, Reason: r.Reason}
	}
	return rows
}

// ExplainImages is Explain's image rows and cut line alone, for a view
// that shows only images.
func ExplainImages(s model.Snapshot, p model.Plan) ([]model.ImageRow, model.CutLine) {
	return explainImages(s, p, displayPods(s.Sandboxes))
}

// explainImages is ExplainImages with the snapshot's displayPods: one row
// per image in imageExplainer's order, then the cut line among them.
func explainImages(s model.Snapshot, p model.Plan, pods map[string]string) ([]model.ImageRow, model.CutLine) {
	return explainRankedImages(s, p, pods, rankImagesForRows(s, p.EvaluatedAt, pods))
}

// explainRankedImages is explainImages with the images ranked at the
// plan's evaluation time (rankImagesForRows).
func explainRankedImages(s model.Snapshot, p model.Plan, pods map[string]string, r imageRanking) ([]model.ImageRow, model.CutLine) {
	x := newImageExplainer(s, p, pods, r)
	order := x.order()
	rows := make([]model.ImageRow, 0, len(order))
	for i, id := range order {
		rows = append(rows, x.row(i+1, id))
	}
	return rows, cutLine(p, rows)
}

// imageExplainer holds what the image rows are told from: the planner's
// ranking of the snapshot, the records, and the plan's removals and keeps,
// each indexed by image ID (the first of an ID listed twice stands).
type imageExplainer struct {
	s    model.Snapshot
	p    model.Plan
	pods map[string]string
	// imageRanking is the planner's ranking and each image's users;
	// byID indexes the ranking.
	imageRanking
	byID map[string]int
	// removeAt is the index of an image's removal in the plan.
	removeAt map[string]int
	keeps    map[string]model.ImageKeep
	// notPlanned is the reason an image stays when the pass plans no
	// image GC.
	notPlanned string
}

// imageRanking is the snapshot's images ranked as the planner ranks
// them (entries, rankImages's), with the names of each image's users
// (firstOf and usedBy, imageUsedBy's) and the snapshot's records by
// image ID (imageRecords).
type imageRanking struct {
	entries []imageEntry
	records map[string]model.ImageRecord
	firstOf map[string]int
	usedBy  [][]string
}

// rankImagesForRows ranks the snapshot's images at now, naming their
// users, from one walk of the containers.
func rankImagesForRows(s model.Snapshot, now time.Time, pods map[string]string) imageRanking {
	users, firstOf, usedBy := imageUsedBy(s, pods)
	records := imageRecords(s.ImageRecords)
	return imageRanking{entries: rankImagesUsing(s, now, users, records), records: records, firstOf: firstOf, usedBy: usedBy}
}

// newImageExplainer takes the planner's ranking of the snapshot's images
// and indexes the plan's removals and keeps.
func newImageExplainer(s model.Snapshot, p model.Plan, pods map[string]string, r imageRanking) *imageExplainer {
	x := &imageExplainer{s: s, p: p, pods: pods, imageRanking: r, notPlanned: fmt.Sprintf("image GC is not part of a %s pass", p.Pass)}
	x.byID = make(map[string]int, len(x.entries))
	for i, e := range x.entries {
		x.byID[e.img.ID] = i
	}
	x.removeAt = make(map[string]int, len(p.ImageGC.Remove))
	for i, r := range p.ImageGC.Remove {
		if _, dup := x.removeAt[r.ID]; !dup {
			x.removeAt[r.ID] = i
		}
	}
	x.keeps = make(map[string]model.ImageKeep, len(p.ImageGC.Keep))
	for _, k := range p.ImageGC.Keep {
		x.keeps[k.ID] = k
	}
	return x
}

// order is the rows' order: the plan's, then its removals and keeps it
// did not order, then every other image in the planner's LRU order. Each
// ID comes once.
func (x *imageExplainer) order() []string {
	g := x.p.ImageGC
	order := make([]string, 0, len(x.entries))
	seen := make(map[string]bool, len(x.entries))
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	for _, id := range g.Order {
		add(id)
	}
	for _, r := range g.Remove {
		add(r.ID)
	}
	for _, k := range g.Keep {
		add(k.ID)
	}
	for _, e := range x.entries {
		add(e.img.ID)
	}
	return order
}

// row tells one image: what it is, its record, what the plan does with it
// and why, and who uses it.
func (x *imageExplainer) row(rank int, id string) model.ImageRow {
	row := model.ImageRow{Rank: rank}
	var e imageEntry
	j, known := x.byID[id]
	if known {
		e = x.entries[j]
		row.Image = e.img
	}
	if r, ok := x.records[id]; ok {
		row.FirstDetected = &r.FirstDetected
		row.LastUsed = r.LastUsed
	}
	if n, ok := x.removeAt[id]; ok {
		x.removal(&row, id, n, known)
	} else {
		x.keep(&row, id, e, known)
	}
	row.Name = format.ImageName(row.Image.RepoTags, row.Image.RepoDigests)
	row.SandboxImage = model.IsSandboxImage(row.Image, x.s.Runtime.SandboxImages)
	if j, ok := x.firstOf[id]; ok {
		row.UsedBy = x.usedBy[j]
	}
	return row
}

// removal fills in the row of the plan's removal n; an image the
// snapshot lacks (known false) is told from the removal itself.
func (x *imageExplainer) removal(row *model.ImageRow, id string, n int, known bool) {
	rm := x.p.ImageGC.Remove[n]
	if !known {
		row.Image = model.Image{ID: id, RepoTags: rm.RepoTags, RepoDigests: rm.RepoDigests, SizeBytes: rm.SizeBytes}
	}
	row.Action, row.Step, row.Reason, row.Detail = model.ActionRemove, n+1, string(rm.Reason), rm.Detail
}

// keep fills in the row of an image the plan keeps. An image the plan
// does not name (a containers pass) gets the reason it would stay, by the
// planner's own rules.
func (x *imageExplainer) keep(row *model.ImageRow, id string, e imageEntry, known bool) {
	k, kept := x.keeps[id]
	if !kept && known {
		k = keepReason(e, x.s, x.pods, x.p.EvaluatedAt, x.p.Policy.Image, x.notPlanned)
	}
	row.Action, row.Reason, row.Detail, row.EligibleAt = model.ActionKeep, string(k.Reason), k.Detail, k.EligibleAt
	if !known {
		row.Image = model.Image{ID: id}
	}
}

// imageUsedBy names the containers using each image, by the rule of
// ImagesInUse, as "ns/pod/container": usedBy[firstOf[id]] for the image
// ID id (the users of images listed twice under one ID are merged, in
// container order, as ImagesInUse merges them). A node's 100,000 dead
// containers are five attempts of 20,000, listed pod by pod, so a name
// is made once for consecutive containers of one pod and name. users is
// imageUsers, from the same walk.
func imageUsedBy(s model.Snapshot, pods map[string]string) (users []imageUse, firstOf map[string]int, usedBy [][]string) {
	firstOf = make(map[string]int, len(s.Images))
	first := make([]int, len(s.Images))
	for i, img := range s.Images {
		j, ok := firstOf[img.ID]
		if !ok {
			j = i
			firstOf[img.ID] = i
		}
		first[i] = j
	}
	users, usedBy = make([]imageUse, len(s.Images)), make([][]string, len(s.Images))
	var last *model.Container
	label := ""
	forEachUse(s.Images, s.Containers, func(i, ci int) {
		c := &s.Containers[ci]
		if last == nil || c.Name == "" || c.Name != last.Name || c.PodSandboxID != last.PodSandboxID || c.PodUID != last.PodUID {
			label = displayPod(pods, c.PodSandboxID, c.PodUID) + "/" + cmp.Or(c.Name, c.ID)
			last = c
		}
		usedBy[first[i]] = append(usedBy[first[i]], label)
		users[i].add(s.Containers, ci)
	})
	return users, firstOf, usedBy
}

// cutLine says where the cut line falls among the rows and words it.
// Removals above the line are what the pass frees.
func cutLine(p model.Plan, rows []model.ImageRow) model.CutLine {
	if p.Pass == model.PassContainers {
		return model.CutLine{Row: -1}
	}
	g := p.ImageGC
	c := model.CutLine{Row: min(g.CutLine, len(rows))}
	for _, r := range rows[:c.Row] {
		if r.Action == model.ActionRemove {
			c.BytesAbove = AddBytes(c.BytesAbove, r.Image.SizeBytes)
		}
	}
	switch {
	case p.Pass == model.PassReclaimAll:
		c.Text = "cut line: reclaim-all removals above free " + format.Bytes(c.BytesAbove)
	case g.Triggered:
		c.Text = fmt.Sprintf("cut line: removals above free %s of %s to free", format.Bytes(c.BytesAbove), format.Bytes(g.BytesToFree))
	default:
		c.Row, c.BytesAbove = 0, 0
		c.Text = fmt.Sprintf("cut line: none, usage %d%% is below the high threshold %d%%", g.UsagePercent, p.Policy.Image.HighThresholdPercent)
	}
	return c
}

// displayPods maps sandbox IDs and pod UIDs to "namespace/name"; a pod UID
// keeps the first name a sandbox gives it. The planners and the
// explanation name pods through it alike.
func displayPods(sandboxes []model.Sandbox) map[string]string {
	m := make(map[string]string, 2*len(sandboxes))
	for _, sb := range sandboxes {
		if sb.PodName == "" {
			continue
		}
		n := sb.PodNamespace + "/" + sb.PodName
		if sb.ID != "" {
			m[sb.ID] = n
		}
		if _, ok := m[sb.PodUID]; !ok && sb.PodUID != "" {
			m[sb.PodUID] = n
		}
	}
	return m
}

// displayPod names a pod by the first of keys (sandbox ID, pod UID) that
// displayPods knows, else by its UID (the last key).
func displayPod(pods map[string]string, keys ...string) string {
	for _, k := range keys {
		if n, ok := pods[k]; ok && k != "" {
			return n
		}
	}
	return "pod " + cmp.Or(keys[len(keys)-1], "(no uid)")
}

// ExplainContainers is Explain's container rows alone: every container
// that is not running, and every removal the snapshot lacks, ordered by
// pod name, container name, newest first (by creation, then attempt),
// then ID.
//
// A node can hold 100,000 dead containers, so the rows are sorted by
// small precomputed keys: the pod's and the name's rank among the pod
// names and the container names, never a lookup, a string or a
// time.Time comparison in the comparator but for the last tie; each row
// is built once, in its place.
func ExplainContainers(s model.Snapshot, p model.Plan) []model.ContainerRow {
	return explainContainers(s, p, displayPods(s.Sandboxes))
}

// explainContainers is ExplainContainers with the snapshot's displayPods.
// Its steps are containerExplainer's: a key for every row, the names
// replaced by their ranks, the keys sorted, then the rows built in their
// places.
func explainContainers(s model.Snapshot, p model.Plan, pods map[string]string) []model.ContainerRow {
	return explainContainersAt(s, p, pods, nil)
}

// explainContainersAt is explainContainers with the index of each of the
// snapshot's containers' removal in p (planContainersAt's removedAt,
// when p's ContainerGC is the planner's); nil finds them by ID
// (removalsByID).
func explainContainersAt(s model.Snapshot, p model.Plan, pods map[string]string, removedAt []int32) []model.ContainerRow {
	if removedAt == nil {
		removedAt = removalsByID(s.Containers, p.ContainerGC)
	}
	x := newContainerExplainer(s, p, pods)
	x.addSnapshot(removedAt)
	x.addMissing()
	x.sort()
	return x.rows()
}

// containerKey orders a container row by small numbers: the pod's and the
// name's rank, creation time (newest first), attempt, and last the ID.
// src is the container's index in s.Containers, or -1-i for missing[i];
// rm is its removal's index in the plan, or -1.
type containerKey struct {
	pod, name, nsec, src, rm int32
	attempt                  uint32
	sec                      int64
}

// containerExplainer builds the container rows of an explanation.
type containerExplainer struct {
	s    model.Snapshot
	p    model.Plan
	pods map[string]string
	// missing are the removals the snapshot lacks, as containers.
	missing []model.Container
	// podNames and names number the pods' and containers' names.
	podNames, names *ranker
	keys            []containerKey
	// lastSandbox, lastUID and lastPod cache podOf's last lookup:
	// consecutive containers of one sandbox (the runtime lists them so)
	// reuse it.
	lastSandbox, lastUID string
	lastPod              int32
}

// newContainerExplainer is an explainer with room for a key per
// container and per removal.
func newContainerExplainer(s model.Snapshot, p model.Plan, pods map[string]string) *containerExplainer {
	return &containerExplainer{s: s, p: p, pods: pods, podNames: newRanker(), names: newRanker(), lastPod: -1,
		keys: make([]containerKey, 0, len(s.Containers)+len(p.ContainerGC.Remove))}
}

// podOf is the number of c's pod's display name.
func (x *containerExplainer) podOf(c *model.Container) int32 {
	if x.lastPod >= 0 && c.PodSandboxID == x.lastSandbox && c.PodUID == x.lastUID {
		return x.lastPod
	}
	x.lastSandbox, x.lastUID, x.lastPod = c.PodSandboxID, c.PodUID, x.podNames.id(displayPod(x.pods, c.PodSandboxID, c.PodUID))
	return x.lastPod
}

// add keys the row of c (src and rm as in containerKey).
func (x *containerExplainer) add(c *model.Container, src, rm int) {
	x.keys = append(x.keys, containerKey{pod: x.podOf(c), name: x.names.id(c.Name), sec: c.CreatedAt.Unix(), nsec: int32(c.CreatedAt.Nanosecond()),
		attempt: c.Attempt, src: int32(src), rm: int32(rm)})
}

// removalsByID is, for each container, the index of the last removal
// of its ID in plan, or -1: removedAt for a plan the planner did not
// index.
func removalsByID(containers []model.Container, plan model.ContainerPlan) []int32 {
	byID := make(map[string]int32, len(plan.Remove))
	for i, r := range plan.Remove {
		byID[r.ID] = int32(i)
	}
	at := make([]int32, len(containers))
	for i := range containers {
		n, ok := byID[containers[i].ID]
		if !ok {
			n = -1
		}
		at[i] = n
	}
	return at
}

// addSnapshot keys every container of the snapshot that is not running,
// with its removal if the plan has one: removedAt[i] for container i.
func (x *containerExplainer) addSnapshot(removedAt []int32) {
	for i := range x.s.Containers {
		c := &x.s.Containers[i]
		if c.State == model.ContainerRunning {
			continue
		}
		x.add(c, i, int(removedAt[i]))
	}
}

// addMissing keys every removal whose container the snapshot does not
// list, as a container made from the removal.
func (x *containerExplainer) addMissing() {
	planned := make([]bool, len(x.p.ContainerGC.Remove)) // removals found in the snapshot
	for _, k := range x.keys {
		if k.rm >= 0 {
			planned[k.rm] = true
		}
	}
	for n, r := range x.p.ContainerGC.Remove {
		if !planned[n] {
			x.missing = append(x.missing, model.Container{ID: r.ID, PodUID: r.PodUID, Name: r.Name, PodSandboxID: r.PodSandboxID, Attempt: r.Attempt, State: r.State})
		}
	}
	for n, i := 0, 0; n < len(x.p.ContainerGC.Remove); n++ {
		if !planned[n] {
			x.add(&x.missing[i], -1-i, n)
			i++
		}
	}
}

// container is the container a key's src names.
func (x *containerExplainer) container(src int32) *model.Container {
	if src >= 0 {
		return &x.s.Containers[src]
	}
	return &x.missing[-1-src]
}

// sort replaces the keys' name numbers by their ranks and sorts the keys:
// by pod, name, newest first, attempt (highest first), then ID.
func (x *containerExplainer) sort() {
	podRank, nameRank := x.podNames.ranks(), x.names.ranks()
	for i := range x.keys {
		x.keys[i].pod, x.keys[i].name = podRank[x.keys[i].pod], nameRank[x.keys[i].name]
	}
	slices.SortFunc(x.keys, func(a, b containerKey) int {
		switch {
		case a.pod != b.pod:
			return cmp.Compare(a.pod, b.pod)
		case a.name != b.name:
			return cmp.Compare(a.name, b.name)
		case a.sec != b.sec:
			return cmp.Compare(b.sec, a.sec)
		case a.nsec != b.nsec:
			return cmp.Compare(b.nsec, a.nsec)
		case a.attempt != b.attempt:
			return cmp.Compare(b.attempt, a.attempt)
		}
		return strings.Compare(x.container(a.src).ID, x.container(b.src).ID)
	})
}

// rows builds each row in its place: its rank among its pod's containers
// of that name, and what the plan does with it and why.
func (x *containerExplainer) rows() []model.ContainerRow {
	keep := newKeeper(x.p)
	rows := make([]model.ContainerRow, len(x.keys))
	for i, k := range x.keys {
		c := x.container(k.src)
		r := &rows[i]
		*r = model.ContainerRow{Pod: x.podNames.byRank(k.pod), Rank: 1, ID: c.ID, Name: c.Name, Attempt: c.Attempt, State: c.State,
			CreatedAt: c.CreatedAt, FinishedAt: c.FinishedAt, Action: model.ActionKeep}
		if i > 0 && x.keys[i-1].pod == k.pod && x.keys[i-1].name == k.name {
			r.Rank = rows[i-1].Rank + 1
		}
		if k.rm >= 0 {
			rm := &x.p.ContainerGC.Remove[k.rm]
			r.Action, r.Step, r.Reason, r.Detail = model.ActionRemove, int(k.rm)+1, string(rm.Reason), rm.Detail
		} else {
			why, detail := keep.why(*r)
			r.Reason, r.Detail = string(why), detail
		}
	}
	return rows
}

// ranker numbers distinct strings as they come, then ranks them in
// string order.
type ranker struct {
	ids    map[string]int32
	list   []string
	byName []int32 // ids in string order, once ranked
}

func newRanker() *ranker { return &ranker{ids: make(map[string]int32)} }

// id is the string's number, in order of first appearance.
func (r *ranker) id(s string) int32 {
	id, ok := r.ids[s]
	if !ok {
		id = int32(len(r.list))
		r.ids[s] = id
		r.list = append(r.list, s)
	}
	return id
}

// ranks maps each id to its rank in string order.
func (r *ranker) ranks() []int32 {
	r.byName = make([]int32, len(r.list))
	for i := range r.byName {
		r.byName[i] = int32(i)
	}
	slices.SortFunc(r.byName, func(x, y int32) int { return strings.Compare(r.list[x], r.list[y]) })
	rank := make([]int32, len(r.list))
	for i, id := range r.byName {
		rank[id] = int32(i)
	}
	return rank
}

// byRank is the string of the rank.
func (r *ranker) byRank(rank int32) string { return r.list[r.byName[rank]] }

// keeper words why the plan keeps dead containers (containerKeep), making
// each wording once: 100,000 kept rows say a few dozen things.
type keeper struct {
	p          model.Plan
	notPlanned string
	newest     map[newestKey]string
}

type newestKey struct {
	rank int
	name string
}

func newKeeper(p model.Plan) *keeper { return &keeper{p: p, newest: make(map[newestKey]string)} }

// why is containerKeep(k.p, r), its most common wordings made once.
func (k *keeper) why(r model.ContainerRow) (model.ContainerKeepReason, string) {
	why, detail := containerKeepReason(k.p, r)
	switch why {
	case model.ContainerKeepNotPlanned:
		if k.notPlanned == "" {
			_, k.notPlanned = containerKeep(k.p, r)
		}
		return why, k.notPlanned
	case model.ContainerKeepNewest:
		nk := newestKey{r.Rank, r.Name}
		d, ok := k.newest[nk]
		if !ok {
			_, d = containerKeep(k.p, r)
			k.newest[nk] = d
		}
		return why, d
	}
	return why, detail
}

package rules

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// ErrInvalidCapacity is returned by UsagePercent for a filesystem whose
// capacity is zero or negative: the kubelet's InvalidDiskCapacity.
var ErrInvalidCapacity = errors.New("invalid capacity")

// UsagePercent returns the filesystem's usage as the kubelet computes it in
// pkg/kubelet/images/image_gc_manager.go (GarbageCollect):
// 100 - floor(available*100/capacity), in integer maths, so it rounds up.
// Available above capacity is clamped to capacity and negative available
// counts as none. The maths cannot overflow for any int64 input. A capacity
// of zero or less is an error wrapping ErrInvalidCapacity.
func UsagePercent(fs model.FsStats) (int, error) {
	capacity, available := fs.CapacityBytes, fs.AvailableBytes
	if capacity <= 0 {
		return 0, fmt.Errorf("%w %d on image filesystem %q", ErrInvalidCapacity, capacity, fs.Mountpoint)
	}
	available = clampAvailable(capacity, available)
	// available*100 may not fit in 64 bits; the quotient always does
	// (available <= capacity), so Div64's precondition hi < capacity holds.
	hi, lo := bits.Mul64(uint64(available), 100)
	q, _ := bits.Div64(hi, lo, uint64(capacity))
	return 100 - int(q), nil
}

// clampAvailable applies the kubelet's clamp (available > capacity becomes
// capacity) and treats a negative available as zero.
func clampAvailable(capacity, available int64) int64 {
	return max(0, min(available, capacity))
}

// bytesToFree is floor(capacity*(100-low)/100) - available, the kubelet's
// amountToFree, computed without overflow for any capacity: with capacity =
// 100q + r, floor(capacity*k/100) = q*k + floor(r*k/100).
func bytesToFree(capacity, available int64, low int) int64 {
	k := int64(100 - min(max(low, 0), 100))
	q, r := capacity/100, capacity%100
	return q*k + r*k/100 - available
}

// ImagesInUse maps each image ID to the containers (in any state, exited
// included) that use it. The kubelet's rule is that a container uses the
// image whose ID equals the container's imageId (else its imageRef); nodegc
// is stricter, for safety: either of the container's imageId and imageRef
// matching the image's ID, any of its repoTags or any of its repoDigests
// counts. The executor's re-check before a removal uses the same rule, so a
// plan and its application agree. Images nobody uses are absent.
func ImagesInUse(images []model.Image, containers []model.Container) map[string][]model.Container {
	out := make(map[string][]model.Container)
	forEachUse(images, containers, func(i, ci int) {
		out[images[i].ID] = append(out[images[i].ID], containers[ci])
	})
	return out
}

// imageUse summarises, for each image index, the containers using it: how
// many, and which one to name (the first running one, else the first).
type imageUse struct {
	n    int
	name int
}

// InUse is the set of the IDs of the images in use, by ImagesInUse's
// rule, without copying every container into a list per image.
func InUse(images []model.Image, containers []model.Container) map[string]bool {
	inUse := make(map[string]bool, len(images))
	for i, u := range imageUsers(images, containers) {
		if u.n > 0 {
			inUse[images[i].ID] = true
		}
	}
	return inUse
}

// imageUsers is the internal form of ImagesInUse, without the lists.
func imageUsers(images []model.Image, containers []model.Container) []imageUse {
	u := make([]imageUse, len(images))
	forEachUse(images, containers, func(i, ci int) { u[i].add(containers, ci) })
	return u
}

// add counts containers[ci] as a user.
func (u *imageUse) add(containers []model.Container, ci int) {
	if u.n == 0 || containers[ci].State == model.ContainerRunning && containers[u.name].State != model.ContainerRunning {
		u.name = ci
	}
	u.n++
}

// forEachUse calls fn(image index, container index) once for every
// container that uses an image, in container order, with one map lookup
// per container reference (none for a container with the references of
// the one before it): linear in images plus containers.
func forEachUse(images []model.Image, containers []model.Container, fn func(i, ci int)) {
	// refs maps each ID, tag and digest to its image; a reference shared
	// by several images (it should not happen) maps to all of them
	// through multi.
	refs := make(map[string]int, len(images)*3)
	multi := make(map[string][]int)
	add := func(ref string, i int) {
		if ref == "" {
			return
		}
		j, ok := refs[ref]
		switch {
		case !ok:
			refs[ref] = i
		case j == i:
		case !slices.Contains(multi[ref], i):
			if len(multi[ref]) == 0 {
				multi[ref] = []int{j}
			}
			multi[ref] = append(multi[ref], i)
		}
	}
	for i, img := range images {
		add(img.ID, i)
		for _, t := range img.RepoTags {
			add(t, i)
		}
		for _, d := range img.RepoDigests {
			add(d, i)
		}
	}
	// hits are the images of the last container looked up, by its
	// references: a pod's dead containers are attempts of one container,
	// listed one after another, with one image.
	var hits []int
	var lastID, lastRef string
	looked := false
	for ci := range containers {
		c := &containers[ci]
		if !looked || c.ImageID != lastID || c.ImageRef != lastRef {
			looked, lastID, lastRef = true, c.ImageID, c.ImageRef
			hits = hits[:0]
			for _, ref := range [2]string{c.ImageID, c.ImageRef} {
				if ref == "" {
					continue
				}
				if m, ok := multi[ref]; ok {
					hits = append(hits, m...)
				} else if i, ok := refs[ref]; ok {
					hits = append(hits, i)
				}
			}
		}
		for k, i := range hits {
			if !slices.Contains(hits[:k], i) { // imageId and imageRef may name one image
				fn(i, ci)
			}
		}
	}
}

// imageEntry is one image as the planner ranks it: the kubelet's
// evictionInfo (image plus record).
type imageEntry struct {
	idx           int
	img           model.Image
	firstDetected time.Time
	// lastUsed is nil for an image never seen in use; an image in use now
	// has lastUsed = now, as the kubelet's detectImages sets it.
	lastUsed *time.Time
	inUse    bool
	pinned   bool
	sandbox  bool
	// users summarises the containers using the image.
	users imageUse
}

// idle is how long the image has not been used: since lastUsed, or since
// firstDetected for a never-used image. The kubelet treats a never-used
// image as infinitely idle (its zero lastUsed), so a MaxAge pass can delete
// an image pulled a minute ago; nodegc does not.
func (e imageEntry) idle(now time.Time) time.Duration {
	if e.lastUsed != nil {
		return now.Sub(*e.lastUsed)
	}
	return now.Sub(e.firstDetected)
}

// compareLRU is the kubelet's byLastUsedAndDetected
// (pkg/kubelet/images/image_gc_manager.go): lastUsed ascending, never-used
// first, then firstDetected ascending; nodegc ends on the image ID so that
// ties are deterministic.
func compareLRU(a, b imageEntry) int {
	return cmp.Or(
		CompareLastUsed(a.lastUsed, b.lastUsed),
		a.firstDetected.Compare(b.firstDetected),
		cmp.Compare(a.img.ID, b.img.ID),
	)
}

// CompareLastUsed orders last-used times for eviction: never used (nil)
// first, then least recently used. It is the first key of the kubelet's
// byLastUsedAndDetected.
func CompareLastUsed(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(*b)
}

// planImageGC is the kubelet's image GC (pkg/kubelet/images/image_gc_manager.go,
// GarbageCollect) as a pure function. Its steps:
//
//  1. Rank every image: records give firstDetected and lastUsed (an image
//     without a record was first detected now and never used); an image
//     in use by any container, exited included, has lastUsed = now.
//  2. Candidates are the images not in use, not pinned and not a sandbox
//     image, whose lastUsed is before now, in LRU order.
//  3. The MaxAge pass (MaxAge > 0): remove candidates idle longer than
//     MaxAge (see imageEntry.idle), at least MinAge old.
//  4. The space pass, when usage >= HighThresholdPercent: remove candidates
//     at least MinAge old in LRU order until freed >= bytesToFree, checked
//     after each removal (so a target <= 0 still removes one). The kubelet
//     runs it after the MaxAge pass on the remaining images and re-reads
//     the filesystem first, so the bytes the MaxAge pass frees count
//     toward the target here, and when they alone bring usage below the
//     high threshold the space pass does not run. If the list ends short
//     of the target, the plan carries a FreeDiskSpaceFailed event.
//
// Every other image is kept with a reason. A capacity of zero or less
// gives an InvalidDiskCapacity event and no space pass (the MaxAge pass,
// which the kubelet runs before it reads the filesystem, still runs).
func planImageGC(s model.Snapshot, p model.ImagePolicy, now time.Time) model.ImagePlan {
	return planImages(s, p, now, false)
}

// emptyImagePlan is an image plan with non-nil lists.
func emptyImagePlan() model.ImagePlan {
	return model.ImagePlan{Remove: []model.ImageRemoval{}, Keep: []model.ImageKeep{}, Events: []model.Event{}, Order: []string{}}
}

// planImages plans image GC, or with reclaim the eviction manager's
// DeleteUnusedImages: every candidate at least MinAge old, in LRU order,
// whatever the thresholds (the kubelet's freeSpace with math.MaxInt64).
// Its steps are imagePass's methods: measure the filesystem, free old
// images, free space (or reclaim all), then say why every other image
// stays.
func planImages(s model.Snapshot, p model.ImagePolicy, now time.Time, reclaim bool) model.ImagePlan {
	return planRankedImages(s, p, now, reclaim, rankImages(s, now))
}

// planRankedImages is planImages with the snapshot's images already
// ranked at now (rankImages), for a caller that explains them too.
func planRankedImages(s model.Snapshot, p model.ImagePolicy, now time.Time, reclaim bool, entries []imageEntry) model.ImagePlan {
	g := newImagePass(s, p, now, entries)
	g.measure()
	if reclaim {
		g.reclaimAll()
	} else {
		g.freeOldImages()
		g.freeSpace()
	}
	g.plan.CutLine = g.cut + 1
	g.keepRest()
	return g.plan
}

// imagePass is one image plan being built: the inputs, the images in LRU
// order and what the steps so far decided. The kubelet's
// realImageGCManager splits GarbageCollect into freeOldImages and
// freeSpace the same way; here the steps only decide, they delete
// nothing.
type imagePass struct {
	s       model.Snapshot
	p       model.ImagePolicy
	now     time.Time
	entries []imageEntry // in LRU order (compareLRU)
	plan    model.ImagePlan
	// removed holds the entry index (imageEntry.idx) of every removal.
	removed map[int]bool
	// capacity and available are the image filesystem's, available
	// clamped to [0, capacity].
	capacity, available int64
	// usage is the filesystem's UsagePercent, valid when validCapacity.
	usage         int
	validCapacity bool
	// cut is the index in entries of the last image a space or reclaim
	// pass removed, or -1.
	cut int
	// notNeeded explains a candidate that is old enough but stays.
	notNeeded string
}

// newImagePass starts a pass over the snapshot's images as rankImages
// ranked them at now, and records their order in the plan, so that a
// view can show the images as the pass saw them.
func newImagePass(s model.Snapshot, p model.ImagePolicy, now time.Time, entries []imageEntry) *imagePass {
	g := &imagePass{s: s, p: p, now: now, plan: emptyImagePlan(), removed: make(map[int]bool), cut: -1,
		notNeeded: "usage below the high threshold"}
	g.entries = entries
	g.plan.Order = make([]string, len(g.entries))
	for i, e := range g.entries {
		g.plan.Order[i] = e.img.ID
	}
	return g
}

// measure reads the image filesystem as the kubelet does before its space
// pass: usage, whether it reaches the high threshold, and how many bytes
// bring it down to the low one. A capacity of zero or less is an
// InvalidDiskCapacity event instead, and no space pass follows.
func (g *imagePass) measure() {
	g.capacity = g.s.ImageFs.CapacityBytes
	g.available = clampAvailable(g.capacity, g.s.ImageFs.AvailableBytes)
	usage, err := UsagePercent(g.s.ImageFs)
	g.validCapacity = err == nil
	if !g.validCapacity {
		g.plan.Events = append(g.plan.Events, model.Event{
			Time: g.now, Reason: model.EventInvalidDiskCapacity, Warning: true,
			Message: InvalidDiskCapacityMessage(g.capacity),
		})
		return
	}
	g.usage = usage
	g.plan.UsagePercent = usage
	g.plan.CapacityBytes = g.capacity
	g.plan.Triggered = usage >= g.p.HighThresholdPercent
	if g.plan.Triggered {
		// Not triggered, nothing is to be freed: the formula would go
		// negative below the low threshold.
		g.plan.BytesToFree = bytesToFree(g.capacity, g.available, g.p.LowThresholdPercent)
	}
}

// eligible reports whether the pass may remove the image now: a
// candidate with a sane size, at least MinAge since first detected.
func (g *imagePass) eligible(e imageEntry) bool {
	return e.candidate(g.now) && e.img.SizeBytes >= 0 && g.now.Sub(e.firstDetected) >= g.p.MinAge
}

// remove adds the image to the plan's removals and counts its bytes as
// freed.
func (g *imagePass) remove(e imageEntry, why model.ImageRemoveReason, detail string) {
	g.removed[e.idx] = true
	g.plan.BytesFreed = AddBytes(g.plan.BytesFreed, e.img.SizeBytes)
	g.plan.Remove = append(g.plan.Remove, model.ImageRemoval{
		ID: e.img.ID, SizeBytes: e.img.SizeBytes, Reason: why,
		RepoTags: e.img.RepoTags, RepoDigests: e.img.RepoDigests, Detail: detail,
	})
}

// reclaimAll removes every eligible image, in LRU order, whatever the
// thresholds: the eviction manager's DeleteUnusedImages.
func (g *imagePass) reclaimAll() {
	for i, e := range g.entries {
		if g.eligible(e) {
			g.remove(e, model.RemoveForReclaim, "reclaim all unused images")
			g.cut = i
		}
	}
}

// freeOldImages is the kubelet's MaxAge pass (freeOldImages): with MaxAge
// set, every eligible image idle longer than MaxAge goes.
func (g *imagePass) freeOldImages() {
	if g.p.MaxAge <= 0 {
		return
	}
	for _, e := range g.entries {
		if idle := e.idle(g.now); g.eligible(e) && idle > g.p.MaxAge {
			g.remove(e, model.RemoveForAge, fmt.Sprintf("idle %s > MaxAge %s", humanDuration(idle), g.p.MaxAge))
		}
	}
}

// freeSpace is the kubelet's space pass (freeSpace), run when usage
// reaches the high threshold and the MaxAge pass did not bring it back
// below: eligible images go in LRU order until the bytes freed, the MaxAge
// pass's included, reach BytesToFree. Falling short is a
// FreeDiskSpaceFailed event.
func (g *imagePass) freeSpace() {
	if g.validCapacity {
		g.notNeeded = fmt.Sprintf("usage %d%% below the high threshold %d%%", g.usage, g.p.HighThresholdPercent)
	} else {
		g.notNeeded = "no space pass: invalid image filesystem capacity"
	}
	if !g.plan.Triggered {
		return
	}
	ageFreed := g.plan.BytesFreed
	spaceUsage, needed := g.usageAfterMaxAge(ageFreed)
	if !needed {
		g.notNeeded = fmt.Sprintf("the MaxAge pass brought usage to %d%%, below the high threshold %d%%", spaceUsage, g.p.HighThresholdPercent)
		return
	}
	freed := g.removeLRU(ageFreed)
	g.notNeeded = "below the cut line: the space pass frees enough before it"
	if freed < g.plan.BytesToFree {
		g.plan.Events = append(g.plan.Events, model.Event{
			Time: g.now, Reason: model.EventFreeDiskSpaceFailed, Warning: true,
			// The kubelet's freed counts its space pass only.
			Message: FreeDiskSpaceFailedMessage(spaceUsage, g.capacity, freed-ageFreed),
		})
	}
}

// usageAfterMaxAge is the usage the kubelet measures before its space
// pass: it re-reads the filesystem after the MaxAge pass, so the bytes
// that pass freed count. It reports whether the space pass still runs
// (usage still at or above the high threshold).
func (g *imagePass) usageAfterMaxAge(ageFreed int64) (usage int, needed bool) {
	if ageFreed <= 0 {
		return g.usage, true
	}
	after := g.s.ImageFs
	after.AvailableBytes = g.available + min(ageFreed, g.capacity-g.available)
	u, _ := UsagePercent(after)
	return u, u >= g.p.HighThresholdPercent
}

// removeLRU removes eligible images not yet removed, in LRU order, until
// freed (starting from the MaxAge pass's bytes) reaches BytesToFree,
// checked after each removal (so a target <= 0 still removes one). It
// returns the bytes freed in all.
func (g *imagePass) removeLRU(freed int64) int64 {
	detail := fmt.Sprintf("usage %d%% >= high threshold %d%%", g.usage, g.p.HighThresholdPercent)
	for i, e := range g.entries {
		if g.removed[e.idx] || !g.eligible(e) {
			continue
		}
		g.remove(e, model.RemoveForSpace, detail)
		g.cut = i
		freed = AddBytes(freed, e.img.SizeBytes)
		if freed >= g.plan.BytesToFree {
			break
		}
	}
	return freed
}

// keepRest says why each image the pass did not remove stays, in LRU
// order.
func (g *imagePass) keepRest() {
	pods := displayPods(g.s.Sandboxes)
	g.plan.Keep = slices.Grow(g.plan.Keep, len(g.entries)-len(g.plan.Remove))
	for _, e := range g.entries {
		if g.removed[e.idx] {
			continue
		}
		g.plan.Keep = append(g.plan.Keep, keepReason(e, g.s, pods, g.now, g.p, g.notNeeded))
	}
}

// AddBytes adds two byte counts, saturating at the int64 limits instead of
// wrapping: a sum that wrapped negative would make the space pass believe
// it never freed enough and remove every eligible image.
func AddBytes(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// candidate reports whether the image may be collected at all: not in
// use, not pinned, not a sandbox image, and (the kubelet's freeSpace rule)
// last used before now.
func (e imageEntry) candidate(now time.Time) bool {
	return !e.inUse && !e.pinned && !e.sandbox && (e.lastUsed == nil || e.lastUsed.Before(now))
}

// keepReason says why a kept image stays. The order of the checks puts
// the permanent reasons first.
func keepReason(e imageEntry, s model.Snapshot, pods map[string]string, now time.Time, p model.ImagePolicy, notNeeded string) model.ImageKeep {
	k := model.ImageKeep{ID: e.img.ID}
	switch {
	case e.pinned && e.sandbox:
		k.Reason, k.Detail = model.KeepPinned, model.DetailSandboxImagePinned
	case e.pinned:
		k.Reason, k.Detail = model.KeepPinned, model.DetailPinned
	case e.sandbox:
		// Not pinned: nodegc keeps it on its own account (containerd
		// before 1.7 does not pin it), and says so.
		k.Reason, k.Detail = model.KeepSandboxImage, model.DetailSandboxImageUnpinned
	case e.inUse:
		k.Reason, k.Detail = model.KeepInUse, inUseDetail(s, pods, e.users)
	case !e.candidate(now):
		// A record's lastUsed at or after now (a clock step back): the
		// kubelet treats it as in use.
		k.Reason, k.Detail = model.KeepInUse, fmt.Sprintf("last used %s, not before now", e.lastUsed.Format(time.RFC3339))
	case e.img.SizeBytes < 0:
		k.Reason, k.Detail = model.KeepBadSize, fmt.Sprintf("the runtime reports an impossible size (%d bytes)", e.img.SizeBytes)
	case now.Sub(e.firstDetected) < p.MinAge:
		at := e.firstDetected.Add(p.MinAge)
		k.Reason, k.Detail, k.EligibleAt = model.KeepTooYoung, "eligible in "+humanDuration(at.Sub(now)), &at
	default:
		k.Reason, k.Detail = model.KeepNotNeeded, notNeeded
	}
	return k
}

// inUseDetail names the container that keeps an image: a running one if
// any, else the first in snapshot order, as "in use by ns/pod/name
// (exited)" (the pod's UID when no sandbox names the pod), plus how many
// others use it.
func inUseDetail(s model.Snapshot, pods map[string]string, users imageUse) string {
	c := s.Containers[users.name]
	pod := c.PodUID
	if n, ok := pods[c.PodSandboxID]; ok {
		pod = n
	}
	name := c.Name
	if name == "" {
		name = c.ID
	}
	d := fmt.Sprintf("in use by %s/%s (%s)", pod, name, shortState(c.State))
	if n := users.n - 1; n > 0 {
		d += fmt.Sprintf(" and %d more", n)
	}
	return d
}

// rankImages joins images with their records and their users and returns
// them in LRU order. Duplicate image IDs keep their first occurrence.
func rankImages(s model.Snapshot, now time.Time) []imageEntry {
	return rankImagesUsing(s, now, imageUsers(s.Images, s.Containers), imageRecords(s.ImageRecords))
}

// imageRecords indexes records by image ID; a duplicate ID keeps its
// first record.
func imageRecords(rs []model.ImageRecord) map[string]model.ImageRecord {
	records := make(map[string]model.ImageRecord, len(rs))
	for _, r := range rs {
		if _, dup := records[r.ID]; !dup {
			records[r.ID] = r
		}
	}
	return records
}

// rankImagesUsing is rankImages with the snapshot's imageUsers and
// imageRecords.
func rankImagesUsing(s model.Snapshot, now time.Time, users []imageUse, records map[string]model.ImageRecord) []imageEntry {
	sandboxRefs := s.Runtime.SandboxImages
	seen := make(map[string]bool, len(s.Images))
	entries := make([]imageEntry, 0, len(s.Images))
	for i, img := range s.Images {
		if seen[img.ID] {
			continue
		}
		seen[img.ID] = true
		e := imageEntry{idx: i, img: img, firstDetected: now, pinned: img.Pinned, sandbox: model.IsSandboxImage(img, sandboxRefs)}
		if r, ok := records[img.ID]; ok {
			e.firstDetected = r.FirstDetected
			e.lastUsed = r.LastUsed
		}
		if users[i].n > 0 {
			e.inUse, e.users = true, users[i]
			t := now
			e.lastUsed = &t
		}
		entries = append(entries, e)
	}
	slices.SortStableFunc(entries, compareLRU)
	return entries
}

// SpacePassPlanned reports whether the image plan runs the space pass.
func SpacePassPlanned(p model.ImagePlan) bool {
	for _, rm := range p.Remove {
		if rm.Reason == model.RemoveForSpace {
			return true
		}
	}
	return false
}

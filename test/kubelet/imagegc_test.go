package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/realnode"
)

// The image-GC settings of the parity test. The kubelet sources cited are
// those of k8s.io/kubernetes v1.36.3.
const (
	// imageGCHigh and imageGCLow are the kubelet's
	// imageGCHighThresholdPercent and imageGCLowThresholdPercent. The
	// image filesystem is driven to about 62 %: above high, so the pass
	// frees (image_gc_manager.go:392-396), and well below the eviction
	// manager's default imagefs.available<15 %, whose reclaim
	// (DeleteUnusedImages, image_gc_manager.go:458) would delete every
	// unused image at once and spoil the comparison.
	imageGCHigh = 60
	imageGCLow  = 50
	// imageMinAge is imageMinimumGCAge, left at the kubelet's default:
	// v1beta1/defaults.go:154-155 turns a zero (unset, or "0s") into 2m,
	// so it cannot be switched off. nodegc must find the same default.
	imageMinAge = 2 * time.Minute
	// imageGCPeriod is the kubelet's ImageGCPeriod (kubelet.go:233). Its
	// first pass runs at once when StartGarbageCollection starts it
	// (kubelet.go:1718, wait.Until runs the function before waiting), the
	// next one 5 min after the first returned (wait.Until is sliding).
	imageGCPeriod = 5 * time.Minute
	// lateImport is how long before the second pass the late image is
	// imported: after every detect of the kubelet's start, so the kubelet
	// first sees it at that pass, too young.
	lateImport  = 90 * time.Second
	imageFsSize = 256 << 20
)

// imageSnapDoc is the part of the NodeSnapshot contract this test reads.
type imageSnapDoc struct {
	TakenAt time.Time `json:"takenAt"`
	Images  []struct {
		ID        string `json:"id"`
		SizeBytes int64  `json:"sizeBytes"`
	} `json:"images"`
	Containers []snapContainer `json:"containers"`
	file       string
}

// snapContainer is the part of a snapshot's container this test reads.
type snapContainer struct {
	ImageID  string `json:"imageId"`
	ImageRef string `json:"imageRef"`
	State    string `json:"state"`
}

// imagePlanDoc is the part of the GCPlan contract this test reads.
type imagePlanDoc struct {
	Policy struct {
		High   int    `json:"imageGCHighThresholdPercent"`
		Low    int    `json:"imageGCLowThresholdPercent"`
		MinAge string `json:"imageMinimumGCAge"`
		MaxAge string `json:"imageMaximumGCAge"`
	} `json:"policy"`
	ImageGC struct {
		UsagePercent int   `json:"usagePercent"`
		Triggered    bool  `json:"triggered"`
		BytesToFree  int64 `json:"bytesToFree"`
		BytesFreed   int64 `json:"bytesFreed"`
		Remove       []struct {
			ID        string `json:"id"`
			SizeBytes int64  `json:"sizeBytes"`
			Reason    string `json:"reason"`
		} `json:"remove"`
		Keep []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
			Detail string `json:"detail"`
		} `json:"keep"`
	} `json:"imageGC"`
}

// TestImageGCParity runs a real kubelet v1.36.3 on the real containerd 2
// and compares its second periodic image-GC pass with nodegc's plan,
// replayed with `plan --from <snapshot just before the pass> --now <pass
// start> --images --kubelet-pid <kubelet>` (thresholds and minimum age
// read from the running kubelet, nothing on nodegc's command line) and the
// kubelet's image records, read from its log: the
// same bytes to free, the same images removed, in the same order wherever
// the kubelet's order is determined, and the same verdict on the images it
// keeps.
//
// Why the arrangement is what it is, from the kubelet's source
// (pkg/kubelet/images/image_gc_manager.go unless said otherwise):
//
//   - The kubelet's records change only when it detects images:
//     detectImages (244-323) runs at every GC pass (imagesInEvictionOrder,
//     551) and in its own 5-minute loop (Start, 220-225). A new image gets
//     firstDetected = the detect's time (293-299), an image some container
//     uses (in any state: GetPods(ctx, true), 253) gets lastUsed = the
//     detect's time.Now() (302-305). Every image of one detect shares one
//     firstDetected, every image in use at it one lastUsed.
//   - The order is sort.Sort(byLastUsedAndDetected) (591, 643-653): last
//     used, then first detected, nothing else; sort.Sort is not stable, so
//     images equal on both come out in any order. Within one 5-minute
//     cycle the candidates of a pass can differ only as "never used" (zero
//     lastUsed) against "used at an earlier detect", and by the detect
//     that first saw them. Two kubelet cycles would take 10 min.
//   - So the images are: two never used, present at the kubelet's start
//     (equal for the kubelet: removed in either order); one used at the
//     start by a container the test removes once the kubelet has seen it
//     (sorts after both, by lastUsed); one in use by a static pod at the
//     pass (excluded, 562-566); one imported 90 s before the second pass,
//     which the kubelet first sees at that pass (too young, 500-504, with
//     the default imageMinimumGCAge of 2m); and the sandbox image, which
//     containerd 2 pins (excluded, 568-571). On containerd 1.6 the sandbox
//     image is not pinned and the kubelet removes it like any never-used
//     image; nodegc never does (docs/kubelet-parity.md, "Where nodegc is stricter").
//   - The filesystem is filled with a plain file, not an image, so that
//     bytesToFree (394) falls in the middle of the third image: the pass
//     removes the two never-used images in either order, then the used
//     one, and stops (513-515). The removed set is then determined, and so
//     is the order between the two classes.
//   - The first pass runs at the kubelet's start (kubelet.go:1718), below
//     the high threshold, and removes nothing; on this machine it fails
//     ("invalid capacity 0 on image filesystem", 386: the stats are not
//     ready yet) after its detect. The second runs imageGCPeriod after the
//     first returned. Its start is taken from the log line that ends the
//     first ("Image garbage collection succeeded", kubelet.go:1735, or
//     "... failed once", kubelet.go:1725).
//   - Fair records: nodegc's plan is given the kubelet's own records,
//     read from its -v=5 log (which detect first saw each image, and the
//     lastUsed it logged), in the snapshot taken just before the pass.
//     nodegc has none of its own to give: `nodegc snapshot` and `plan` are
//     read-only and never write the state dir, so in every snapshot each
//     image is first detected at the snapshot (too young for 2 min); only
//     the dashboard and `gc` keep records, and both would collect images
//     here themselves. That plan is logged, not compared. With the same
//     records, what is compared is the rules: the same bytes to free, the
//     same set, and the order class by class, never inside a class the
//     kubelet leaves to its unstable sort (nodegc breaks those ties by ID).
func TestImageGCParity(t *testing.T) {
	n := startNodeOn(t, imageFsSize, realnode.Containerd2())
	if !n.Runtime().PinsSandboxImage() {
		t.Fatalf("runtime %s does not pin the sandbox image; the kubelet would remove it", n.Runtime())
	}
	nodegc := build(t, "github.com/nodegc/nodegc/cmd/nodegc", "nodegc")
	must := n.Must(t)
	never := []realnode.ImageRef{
		must.ImportImages(1, 10<<20, "never-a")[0],
		must.ImportImages(1, 14<<20, "never-b")[0],
	}
	used := must.ImportImages(1, 12<<20, "used-earlier")[0]
	inUse := must.ImportImages(1, 6<<20, "in-use")[0]

	// A container the kubelet sees using `used` at its start: made through
	// CRI with the kubelet's labels, as another client (or a kubelet
	// before a restart) would leave it.
	rt := n.RuntimeClient()
	earlierPod := must.RunPod("earlier", "default", "nodegc-imagegc-earlier", "")
	must.StartContainer(earlierPod, "app", used.Ref, 0)

	snapDir := t.TempDir()
	stateDir := t.TempDir()
	var snaps []imageSnapDoc
	var kubeletPID string
	snapshot := func() imageSnapDoc {
		t.Helper()
		file := filepath.Join(snapDir, fmt.Sprintf("%04d.json", len(snaps)))
		out, err := exec.Command(nodegc, "snapshot", "-o", file,
			"--runtime-endpoint", n.Endpoint(), "--pod-logs-dir", n.PodLogsDir(),
			"--state-dir", stateDir, "--kubelet-pid", kubeletPID).CombinedOutput()
		if err != nil {
			t.Fatalf("nodegc snapshot: %v: %s", err, out)
		}
		s := readImageSnapshot(t, file)
		snaps = append(snaps, s)
		return s
	}
	k := startKubelet(t, n, kubeletOptions{ImageGCHigh: imageGCHigh, ImageGCLow: imageGCLow})
	kubeletPID = strconv.Itoa(k.cmd.Process.Pid)
	k.writeManifest(t, "in-use", sleepPod("in-use", inUse.Ref))
	year := time.Now().Year()
	logEntries := func() []logEntry {
		t.Helper()
		if k.exited() {
			t.Fatalf("kubelet exited early; tail of its log:\n%s", tail(k.logFile, 40))
		}
		entries, err := readLog(k.logFile, year)
		if err != nil {
			t.Fatal(err)
		}
		return entries
	}

	// The first pass ends, and some detect has seen `used` in use.
	var firstEnd time.Time
	if !waitFor(2*time.Minute, func() bool {
		entries := logEntries()
		ends := imageGCEnds(entries)
		if len(ends) == 0 {
			return false
		}
		firstEnd = ends[0].At
		return slices.ContainsFunc(entries, func(e logEntry) bool {
			return e.Msg == "Setting Image ID lastUsed" && e.value("imageID") == used.ID
		})
	}) {
		t.Fatalf("setup: the kubelet's first image GC pass did not end, or no detect saw %s in use; tail of its log:\n%s", used.Ref, tail(k.logFile, 40))
	}
	for _, e := range logEntries() {
		if e.File == "image_gc_manager.go" && e.Msg == "Removing image to free bytes" {
			t.Fatalf("setup: the kubelet's first pass removed %s (the image filesystem was above %d %% at its start)", e.value("imageID"), imageGCHigh)
		}
	}
	removeSandbox(t, rt, earlierPod)
	passStart := firstEnd.Add(imageGCPeriod)
	t.Logf("kubelet's first image GC pass ended %s; the second starts %s", firstEnd.Format(time.TimeOnly), passStart.Format(time.TimeOnly))

	for time.Until(passStart) > lateImport {
		logEntries()
		time.Sleep(min(5*time.Second, time.Until(passStart.Add(-lateImport))))
	}
	late := must.ImportImages(1, 8<<20, "late")[0]
	s := snapshot()
	if !slices.ContainsFunc(s.Containers, func(c snapContainer) bool {
		return c.State == "CONTAINER_RUNNING" && (c.ImageID == inUse.ID || c.ImageRef == inUse.ID)
	}) {
		t.Fatalf("setup: the static pod in-use runs no container of %s; tail of the kubelet's log:\n%s", inUse.Ref, tail(k.logFile, 40))
	}
	if slices.ContainsFunc(s.Containers, func(c snapContainer) bool {
		return c.ImageID == used.ID || c.ImageRef == used.ID
	}) {
		t.Fatalf("setup: a container still uses %s", used.Ref)
	}

	// Fill the image filesystem so that bytesToFree =
	// floor(capacity·(100−low)/100) − available (image_gc_manager.go:394)
	// is the two never-used images plus half the used one.
	sizes := map[string]int64{}
	for _, im := range s.Images {
		sizes[im.ID] = im.SizeBytes
	}
	want := sizes[never[0].ID] + sizes[never[1].ID] + sizes[used.ID]/2
	fs := must.ImageFsUsage()
	target := fs.Capacity/100*(100-imageGCLow) + fs.Capacity%100*(100-imageGCLow)/100 - want
	if fill := fs.Available - target; fill > 0 {
		writeFiller(t, filepath.Join(n.ImageFsMount(), "nodegc-filler"), fill)
	}
	fs = must.ImageFsUsage()
	usage := 100 - int(fs.Available*100/fs.Capacity)
	if usage < imageGCHigh || usage > 80 {
		t.Fatalf("setup: image filesystem at %d %% after filling, want between %d (high threshold) and 80 (imagefs eviction at 85)", usage, imageGCHigh)
	}

	// A snapshot every second from 15 s before the pass until it has
	// ended.
	for time.Until(passStart) > 15*time.Second {
		logEntries()
		time.Sleep(min(5*time.Second, time.Until(passStart.Add(-15*time.Second))))
	}
	var secondEnd time.Time
	deadline := passStart.Add(90 * time.Second)
	for {
		snapshot()
		ends := imageGCEnds(logEntries())
		if len(ends) >= 2 {
			secondEnd = ends[1].At
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kubelet's second image GC pass did not end by %s; tail of its log:\n%s", deadline.Format(time.TimeOnly), tail(k.logFile, 40))
		}
		time.Sleep(time.Second)
	}
	entries := logEntries()
	if slices.ContainsFunc(entries, func(e logEntry) bool { return e.Msg == "Attempting to delete unused images" }) {
		t.Fatalf("the eviction manager reclaimed images (DeleteUnusedImages, image_gc_manager.go:458): not a periodic pass to compare")
	}
	pass := readImageGCPass(entries, passStart.Add(-time.Second), secondEnd)
	if !pass.Triggered {
		t.Fatalf("the kubelet's second pass (%s to %s) did not find the image filesystem over the high threshold", passStart.Format(time.TimeOnly), secondEnd.Format(time.TimeOnly))
	}
	records := kubeletRecords(entries, pass.TriggeredAt)

	var before *imageSnapDoc
	for i := range snaps {
		if snaps[i].TakenAt.Before(passStart) {
			before = &snaps[i]
		}
	}
	if before == nil {
		t.Fatal("no snapshot before the pass")
	}
	planFrom := func(file string) imagePlanDoc {
		t.Helper()
		args := []string{"plan", "--from", file, "--now", passStart.UTC().Format(time.RFC3339Nano), "--images",
			"-o", "json", "--state-dir", stateDir, "--kubelet-pid", kubeletPID}
		out, err := exec.Command(nodegc, args...).Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("nodegc %s: %v: %s", strings.Join(args, " "), err, stderr)
		}
		var plan imagePlanDoc
		if err := json.Unmarshal(out, &plan); err != nil {
			t.Fatalf("decode plan: %v", err)
		}
		return plan
	}
	// nodegc's own snapshot holds no records worth the name: `nodegc
	// snapshot` is read-only and never writes the state dir, so every
	// image is first detected at the snapshot and too young. Only the
	// dashboard and `gc` keep records; neither can run here without
	// collecting images itself. Shown, not compared.
	own := planFrom(before.file)
	var ownKept []string
	for _, kp := range own.ImageGC.Keep {
		ownKept = append(ownKept, kp.Reason)
	}
	t.Logf("with the snapshot's own records nodegc removes %d and keeps %v", len(own.ImageGC.Remove), ownKept)
	// The comparison: the same snapshot with the kubelet's records.
	plan := planFrom(withKubeletRecords(t, before.file, records))
	t.Logf("snapshot %s (%s before the pass) with the kubelet's records; plan: usage %d %%, bytesToFree %d, remove %d",
		filepath.Base(before.file), passStart.Sub(before.TakenAt).Round(time.Millisecond), plan.ImageGC.UsagePercent, plan.ImageGC.BytesToFree, len(plan.ImageGC.Remove))

	names := map[string]string{never[0].ID: "never-a", never[1].ID: "never-b", used.ID: "used-earlier",
		inUse.ID: "in-use", late.ID: "late", n.SandboxImage().ID: "pause"}
	name := func(id string) string {
		if s, ok := names[id]; ok {
			return s
		}
		return id[:min(19, len(id))]
	}
	nameAll := func(ids []string) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = name(id)
		}
		return "[" + strings.Join(s, " ") + "]"
	}

	// The policy nodegc read from the kubelet.
	if plan.Policy.High != imageGCHigh || plan.Policy.Low != imageGCLow || plan.Policy.MinAge != imageMinAge.String() {
		t.Errorf("nodegc read the kubelet's image policy as high %d low %d minAge %s, want %d %d %s",
			plan.Policy.High, plan.Policy.Low, plan.Policy.MinAge, imageGCHigh, imageGCLow, imageMinAge)
	}

	// The arrangement held on the kubelet's side: its own records make
	// the classes the test meant.
	key := func(id string) string { return records[id].key() }
	if r, ok := records[never[0].ID]; !ok || r.LastUsed >= 0 || r != records[never[1].ID] {
		t.Fatalf("setup: the kubelet's records of the never-used images differ or show a use: %+v %+v", records[never[0].ID], records[never[1].ID])
	}
	if r := records[used.ID]; r.LastUsed < 0 {
		t.Fatalf("setup: the kubelet never saw %s in use: %+v", used.Ref, r)
	}

	kubeletRemoved := pass.Removed
	var planned []string
	for _, r := range plan.ImageGC.Remove {
		planned = append(planned, r.ID)
	}
	t.Logf("kubelet: usage %d %%, amountToFree %d, removed %s; nodegc: usage %d %%, bytesToFree %d, removes %s",
		pass.Usage, pass.AmountToFree, nameAll(kubeletRemoved), plan.ImageGC.UsagePercent, plan.ImageGC.BytesToFree, nameAll(planned))
	ok := true
	if plan.ImageGC.BytesToFree != pass.AmountToFree || plan.ImageGC.UsagePercent != pass.Usage || !plan.ImageGC.Triggered {
		ok = false
		t.Errorf("bytes to free: kubelet %d (usage %d %%), nodegc %d (usage %d %%, triggered %v)",
			pass.AmountToFree, pass.Usage, plan.ImageGC.BytesToFree, plan.ImageGC.UsagePercent, plan.ImageGC.Triggered)
	}
	if !slices.Equal(slices.Sorted(slices.Values(planned)), slices.Sorted(slices.Values(kubeletRemoved))) {
		ok = false
		t.Errorf("removed set: kubelet %s, nodegc %s", nameAll(kubeletRemoved), nameAll(planned))
	} else {
		// The order, class by class: inside a class (equal last used and
		// first detected for the kubelet) its sort.Sort decides at random.
		var kc, nc []string
		for _, id := range kubeletRemoved {
			kc = append(kc, key(id))
		}
		for _, id := range planned {
			nc = append(nc, key(id))
		}
		if !slices.IsSortedFunc(kubeletRemoved, func(a, b string) int { return records[a].compare(records[b]) }) {
			t.Fatalf("the kubelet's removals %s are not in the order its records (read from its log) give: %v; the log reading is wrong", nameAll(kubeletRemoved), kc)
		}
		if !slices.Equal(kc, nc) {
			ok = false
			t.Errorf("order by the kubelet's classes: kubelet %s %v, nodegc %s %v", nameAll(kubeletRemoved), kc, nameAll(planned), nc)
		}
		if len(slices.Compact(slices.Clone(kc))) < 2 {
			t.Errorf("setup: the removals span %d class of the kubelet's order, want at least 2 for the order to be compared", len(slices.Compact(slices.Clone(kc))))
		}
	}
	var freed int64
	for _, id := range kubeletRemoved {
		freed += pass.Sizes[id]
	}
	if freed != plan.ImageGC.BytesFreed {
		ok = false
		t.Errorf("bytes freed: kubelet %d (its removals' sizes), nodegc %d", freed, plan.ImageGC.BytesFreed)
	}
	// An image beyond the kubelet's cut in the class of one it removed
	// would make the set a matter of its unstable sort.
	for _, kp := range plan.ImageGC.Keep {
		if kp.Reason == "not-needed" && slices.ContainsFunc(kubeletRemoved, func(id string) bool { return key(id) == key(kp.ID) }) {
			t.Errorf("setup: %s is kept beyond the cut but ties with a removed image for the kubelet: the set is not determined", name(kp.ID))
		}
	}
	// The kept images: the kubelet's reason, logged as it evaluated them,
	// against nodegc's.
	keep := map[string]string{}
	for _, kp := range plan.ImageGC.Keep {
		keep[kp.ID] = kp.Reason
	}
	for _, v := range pass.Kept {
		if got := keep[v.ID]; got != v.Reason {
			ok = false
			t.Errorf("kept %s: kubelet %s (%q), nodegc %q", name(v.ID), v.Reason, v.Msg, got)
		}
	}
	for _, id := range []string{inUse.ID, late.ID, n.SandboxImage().ID} {
		if !slices.ContainsFunc(pass.Kept, func(v keptImage) bool { return v.ID == id }) {
			t.Errorf("setup: the kubelet's pass logged no reason to keep %s", name(id))
		}
	}
	matched := 0
	if ok {
		matched = 1
	} else {
		for _, kp := range plan.ImageGC.Keep {
			t.Logf("nodegc keeps %s: %s (%s)", name(kp.ID), kp.Reason, kp.Detail)
		}
	}
	t.Logf("image GC parity: 1 kubelet pass compared, %d matched (kubelet removed %s, kept %d with a logged reason)", matched, nameAll(kubeletRemoved), len(pass.Kept))
}

// readImageSnapshot decodes a NodeSnapshot file.
func readImageSnapshot(t *testing.T, file string) imageSnapDoc {
	t.Helper()
	var s imageSnapDoc
	readJSON(t, file, &s)
	s.file = file
	return s
}

// removeSandbox stops and removes a sandbox with its containers; one the
// kubelet removed first (an orphan to it) is not an error.
func removeSandbox(t *testing.T, rt runtimeapi.RuntimeServiceClient, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil && status.Code(err) != codes.NotFound {
		t.Fatalf("stop sandbox %s: %v", id, err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil && status.Code(err) != codes.NotFound {
		t.Fatalf("remove sandbox %s: %v", id, err)
	}
}

// writeFiller writes size bytes to a new file (written, so tmpfs holds the
// pages: a sparse file would take no space).
func writeFiller(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 0xa5
	}
	for size > 0 {
		n := min(size, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			t.Fatalf("write %s: %v", path, err)
		}
		size -= n
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// imageGCEnds returns the lines that end the kubelet's periodic image-GC
// passes: "Image garbage collection succeeded" (V4, or V1 after a
// failure), "Image garbage collection failed once. Stats initialization
// may not have completed yet" and "Image garbage collection failed
// multiple times in a row" (kubelet.go StartGarbageCollection, 1718-1737).
func imageGCEnds(entries []logEntry) []logEntry {
	return logLines(entries, func(e logEntry) bool {
		return e.File == "kubelet.go" && strings.HasPrefix(e.Msg, "Image garbage collection ")
	})
}

// keptImage is an image the kubelet's pass logged a reason to keep.
type keptImage struct {
	ID     string
	Reason string // nodegc's name for the reason
	Msg    string // the kubelet's line
}

// imageGCPass is what one periodic image-GC pass logged.
type imageGCPass struct {
	// Triggered is set by the line "Disk usage on image filesystem is over
	// the high threshold, trying to free bytes down to the low threshold"
	// (image_gc_manager.go:395), logged after the pass detected images
	// and read the filesystem, before it removes any.
	Triggered    bool
	TriggeredAt  time.Time // when that line was logged
	Usage        int
	AmountToFree int64
	// Removed are the "Removing image to free bytes" lines (freeImage,
	// 529), in order; Sizes their size values.
	Removed []string
	Sizes   map[string]int64
	// Kept are the images imagesInEvictionOrder and freeSpace logged a
	// reason to keep (V5): in use (564), pinned (569), too young (502),
	// used too recently (494).
	Kept []keptImage
}

// readImageGCPass reads the lines image_gc_manager.go logged between from
// and to.
func readImageGCPass(entries []logEntry, from, to time.Time) imageGCPass {
	p := imageGCPass{Sizes: map[string]int64{}}
	reasons := map[string]string{
		"Image ID is being used":                                                               "in-use",
		"Image is pinned, skipping garbage collection":                                         "pinned",
		"Image ID was used too recently, not eligible for garbage collection":                  "in-use",
		"Image ID's age is less than the policy's minAge, not eligible for garbage collection": "too-young",
	}
	for _, e := range entries {
		if e.At.Before(from) || e.At.After(to) || e.File != "image_gc_manager.go" {
			continue
		}
		switch {
		case e.Msg == "Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold":
			p.Triggered, p.TriggeredAt = true, e.At
			u, _ := e.number("usage")
			p.Usage = int(u)
			p.AmountToFree, _ = e.number("amountToFree")
		case e.Msg == "Removing image to free bytes":
			id := e.value("imageID")
			p.Removed = append(p.Removed, id)
			p.Sizes[id], _ = e.number("size")
		case reasons[e.Msg] != "":
			p.Kept = append(p.Kept, keptImage{ID: e.value("imageID"), Reason: reasons[e.Msg], Msg: e.Msg})
		}
	}
	return p
}

// number returns an unquoted integer key=value pair's value.
func (e logEntry) number(key string) (int64, bool) {
	i := strings.Index(e.Rest, " "+key+"=")
	if i < 0 {
		return 0, false
	}
	s := e.Rest[i+len(key)+2:]
	if j := strings.IndexByte(s, ' '); j >= 0 {
		s = s[:j]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// kubeletRecord is the kubelet's record of an image as its log shows it:
// the detect (numbered from 0 in log order) that first saw it and the
// last that saw it in use (-1: never), with their times. All images of one
// detect share its time (image_gc_manager.go:296 and 304), so equal
// numbers are equal times, which the kubelet's sort leaves in any order.
type kubeletRecord struct {
	FirstDetected int
	LastUsed      int
	// FirstDetectedAt is the time of the detect's first line: its
	// detectTime is not logged, and is a few milliseconds earlier.
	FirstDetectedAt time.Time
	// LastUsedAt is the lastUsed value the kubelet logged (303), exact.
	LastUsedAt time.Time
}

// key names the record's class in the kubelet's order.
func (r kubeletRecord) key() string {
	if r.LastUsed < 0 {
		return fmt.Sprintf("never-used/detect-%d", r.FirstDetected)
	}
	return fmt.Sprintf("used-at-detect-%d/detect-%d", r.LastUsed, r.FirstDetected)
}

// compare is byLastUsedAndDetected (image_gc_manager.go:647-653): last
// used first (never used is the zero time, before any), then first
// detected.
func (r kubeletRecord) compare(o kubeletRecord) int {
	if r.LastUsed != o.LastUsed {
		return r.LastUsed - o.LastUsed
	}
	return r.FirstDetected - o.FirstDetected
}

// kubeletRecords replays the kubelet's detects (detectImages, -v=5) up to
// until. A detect logs, under the records lock, one "Adding image ID to
// currentImages" line per image it lists, followed by "Image ID is new"
// when it is (294) and "Setting Image ID lastUsed" when a container uses
// it (303); it drops the records of images gone (317), as a removal does
// (541). A detect begins where an image repeats, or after a pause of a
// second (a detect takes milliseconds; two run 5 min apart).
//
// Detects number in log order, which is the order of their times except
// when the GC pass's detect and the 5-minute loop's run at the same
// instant (the kubelet's start): each takes its time before the lock, so
// the one logged second may hold the earlier time. The comparison only
// relies on never-used against used, and on images new at the same detect.
func kubeletRecords(entries []logEntry, until time.Time) map[string]kubeletRecord {
	recs := map[string]kubeletRecord{}
	detect := -1
	var detectAt time.Time
	var seen map[string]bool
	var last time.Time
	for _, e := range entries {
		if e.At.After(until) || e.File != "image_gc_manager.go" {
			continue
		}
		id := e.value("imageID")
		switch e.Msg {
		case "Adding image ID to currentImages":
			if seen == nil || seen[id] || e.At.Sub(last) > time.Second {
				detect++
				detectAt = e.At
				seen = map[string]bool{}
			}
			seen[id] = true
			last = e.At
		case "Image ID is new":
			recs[id] = kubeletRecord{FirstDetected: detect, LastUsed: -1, FirstDetectedAt: detectAt}
		case "Setting Image ID lastUsed":
			r := recs[id]
			r.LastUsed = detect
			r.LastUsedAt = parseGoTime(e.value("lastUsed"))
			recs[id] = r
		case "Image ID is no longer present; removing from imageRecords", "Removing image to free bytes":
			delete(recs, id)
		}
	}
	return recs
}

// parseGoTime parses a time.Time as its String method writes it, which is
// how klog logs one: "2026-11-24 23:20:24.444752123 +0000 UTC
// m=+0.395327327" (the monotonic reading dropped). Zero if it does not
// parse.
func parseGoTime(s string) time.Time {
	s, _, _ = strings.Cut(s, " m=")
	at, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", s)
	if err != nil {
		return time.Time{}
	}
	return at
}

// withKubeletRecords writes a copy of the snapshot file whose
// imageRecords are the kubelet's (for the images it has a record of; an
// image without one is, by the snapshot contract, first detected at
// evaluation time and never used) and returns its path.
func withKubeletRecords(t *testing.T, file string, recs map[string]kubeletRecord) string {
	t.Helper()
	var doc map[string]any
	readJSON(t, file, &doc)
	s := readImageSnapshot(t, file)
	var out []map[string]any
	for _, im := range s.Images {
		r, ok := recs[im.ID]
		if !ok {
			continue
		}
		rec := map[string]any{"id": im.ID, "firstDetected": r.FirstDetectedAt.UTC().Format(time.RFC3339Nano)}
		if r.LastUsed >= 0 {
			if r.LastUsedAt.IsZero() {
				t.Fatalf("the kubelet's lastUsed of %s did not parse", im.ID)
			}
			rec["lastUsed"] = r.LastUsedAt.UTC().Format(time.RFC3339Nano)
		}
		out = append(out, rec)
	}
	doc["imageRecords"] = out
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSuffix(file, ".json") + "-kubelet-records.json"
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

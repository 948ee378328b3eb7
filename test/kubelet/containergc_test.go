package kubelet

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// snapshotDoc is the part of the NodeSnapshot contract the test reads.
type snapshotDoc struct {
	TakenAt    time.Time `json:"takenAt"`
	Containers []struct {
		ID         string    `json:"id"`
		Name       string    `json:"name"`
		PodUID     string    `json:"podUID"`
		State      string    `json:"state"`
		CreatedAt  time.Time `json:"createdAt"`
		FinishedAt time.Time `json:"finishedAt"`
	} `json:"containers"`
	file string
}

// planDoc is the part of the GCPlan contract the test reads.
type planDoc struct {
	ContainerGC struct {
		Remove []struct {
			ID string `json:"id"`
		} `json:"remove"`
	} `json:"containerGC"`
}

// gcPass is one periodic container-GC pass of the kubelet, from its log.
type gcPass struct {
	Start   time.Time // when it began: 1 min after the previous pass ended
	End     time.Time // its "Container garbage collection succeeded" line
	Removed []string  // container IDs it removed
}

// The kubelet's container-GC settings for the test: they exist only on its
// command line, where nodegc must read them. Each crash-looping unit keeps
// at most 2 dead containers (the pod container deletor keeps as many), so
// the periodic passes remove by the node limit of 3, across 6 units.
const (
	maxPerContainer = 2
	maxContainers   = 3
	minContainerTTL = 3 * time.Second
	crashPods       = 6
	// gcPeriod is the kubelet's ContainerGCPeriod (pkg/kubelet/kubelet.go),
	// measured from the end of a pass (wait.Until is sliding).
	gcPeriod = time.Minute
)

// TestContainerGCParity runs a real kubelet with crash-looping static pods
// and the container-GC flags on its command line, snapshots the node every
// second with nodegc, and replays each of the kubelet's periodic container
// GC passes with `nodegc plan --from <snapshot just before> --now <pass
// start>` and nothing but --kubelet-pid on nodegc's command line: the
// containers the plan removes must be the ones the kubelet removed.
func TestContainerGCParity(t *testing.T) {
	n := startNode(t, 0)
	nodegc := build(t, "github.com/nodegc/nodegc/cmd/nodegc", "nodegc")
	image := n.Must(t).ImportImages(1, 4<<20, "crash")[0].Ref
	k := startKubelet(t, n, kubeletOptions{Flags: []string{
		"--maximum-dead-containers-per-container=" + strconv.Itoa(maxPerContainer),
		"--maximum-dead-containers=" + strconv.Itoa(maxContainers),
		"--minimum-container-ttl-duration=" + minContainerTTL.String(),
	}})
	for i := range crashPods {
		k.writeManifest(t, fmt.Sprintf("crash-%d", i), crashLoopPod(fmt.Sprintf("crash-%d", i), image))
	}
	year := time.Now().Year()
	snapDir := t.TempDir()
	stateDir := t.TempDir()

	// Snapshot every second until the kubelet has run 4 passes after its
	// first (which finds nothing: it runs at start).
	var snaps []snapshotDoc
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		if k.exited() {
			t.Fatalf("kubelet exited early; tail of its log:\n%s", tail(k.logFile, 40))
		}
		file := filepath.Join(snapDir, fmt.Sprintf("%04d.json", i))
		out, err := exec.Command(nodegc, "snapshot", "-o", file,
			"--runtime-endpoint", n.Endpoint(), "--pod-logs-dir", n.PodLogsDir(),
			"--state-dir", stateDir, "--kubelet-pid", strconv.Itoa(k.cmd.Process.Pid)).CombinedOutput()
		if err != nil {
			t.Fatalf("nodegc snapshot: %v: %s", err, out)
		}
		s := readSnapshot(t, file)
		snaps = append(snaps, s)
		entries, err := readLog(k.logFile, year)
		if err != nil {
			t.Fatal(err)
		}
		if len(gcPasses(entries)) >= 5 {
			break
		}
		time.Sleep(time.Second)
	}
	entries, err := readLog(k.logFile, year)
	if err != nil {
		t.Fatal(err)
	}
	passes := gcPasses(entries)
	removals := containerRemovals(entries)

	var compared, matched, withRemovals int
	for i, p := range passes {
		before, after, ok := around(snaps, p)
		if !ok {
			t.Logf("pass %d (%s): no snapshot on both sides", i, p.End.Format(time.TimeOnly))
			continue
		}
		if why := changed(before, after, p, removals); why != "" {
			t.Logf("pass %d (%s): not compared: %s", i, p.End.Format(time.TimeOnly), why)
			continue
		}
		args := []string{"plan", "--from", before.file, "--now", p.Start.UTC().Format(time.RFC3339Nano),
			"-o", "json", "--state-dir", stateDir, "--kubelet-pid", strconv.Itoa(k.cmd.Process.Pid)}
		out, err := exec.Command(nodegc, args...).Output()
		if err != nil {
			t.Fatalf("nodegc %s: %v", strings.Join(args, " "), err)
		}
		var plan planDoc
		if err := json.Unmarshal(out, &plan); err != nil {
			t.Fatalf("decode plan: %v", err)
		}
		var planned []string
		for _, r := range plan.ContainerGC.Remove {
			planned = append(planned, r.ID)
		}
		slices.Sort(planned)
		got := slices.Sorted(slices.Values(p.Removed))
		compared++
		if len(got) > 0 {
			withRemovals++
		}
		if slices.Equal(planned, got) {
			matched++
			t.Logf("pass %d (%s): kubelet removed %d, nodegc planned the same", i, p.End.Format(time.TimeOnly), len(got))
			continue
		}
		t.Errorf("pass %d (%s) from %s: kubelet removed %s, nodegc planned %s",
			i, p.End.Format(time.TimeOnly), filepath.Base(before.file), short(got), short(planned))
	}
	t.Logf("container GC parity: %d kubelet passes, %d compared, %d matched, %d with removals", len(passes), compared, matched, withRemovals)
	if compared < 2 || withRemovals < 1 {
		t.Errorf("too little to compare: %d passes compared, %d with removals (want at least 2 and 1)", compared, withRemovals)
	}
}

// readSnapshot decodes a NodeSnapshot file.
func readSnapshot(t *testing.T, file string) snapshotDoc {
	t.Helper()
	var s snapshotDoc
	readJSON(t, file, &s)
	s.file = file
	return s
}

// gcPasses finds the kubelet's periodic container-GC passes in its log.
// A pass logs nothing when it starts, only "Container garbage collection
// succeeded" at V(4) when it ends (kubelet.go StartGarbageCollection); the
// next starts one gcPeriod after that. The containers it removed are the
// "Removing container" lines (kuberuntime_container.go removeContainer,
// V(4)) between its start and end; the pod container deletor logs the same
// line on each container death, at other times.
func gcPasses(entries []logEntry) []gcPass {
	var passes []gcPass
	var prevEnd time.Time
	for _, e := range entries {
		if e.Msg != "Container garbage collection succeeded" {
			continue
		}
		start := e.At
		if !prevEnd.IsZero() {
			start = prevEnd.Add(gcPeriod)
		}
		p := gcPass{Start: start, End: e.At}
		// The first pass's start is unknown; it runs at start-up, before
		// any container exists, so only lines close to its end count.
		from := start
		if prevEnd.IsZero() {
			from = e.At.Add(-time.Second)
		}
		for _, r := range containerRemovals(entries) {
			if !r.At.Before(from.Add(-10*time.Millisecond)) && !r.At.After(e.At) {
				p.Removed = append(p.Removed, r.value("containerID"))
			}
		}
		passes = append(passes, p)
		prevEnd = e.At
	}
	return passes
}

// containerRemovals returns the kubelet's "Removing container" lines.
func containerRemovals(entries []logEntry) []logEntry {
	return logLines(entries, func(e logEntry) bool {
		return e.Msg == "Removing container" && strings.HasPrefix(e.File, "kuberuntime_container.go")
	})
}

// around returns the last snapshot taken before the pass started and the
// first taken after it ended.
func around(snaps []snapshotDoc, p gcPass) (before, after snapshotDoc, ok bool) {
	bi, ai := -1, -1
	for i, s := range snaps {
		if s.TakenAt.Before(p.Start) {
			bi = i
		}
		if ai < 0 && s.TakenAt.After(p.End) {
			ai = i
		}
	}
	if bi < 0 || ai < 0 {
		return before, after, false
	}
	return snaps[bi], snaps[ai], true
}

// changed says why the snapshot before a pass may not be what the kubelet
// saw when the pass ran, or "" when it is: no container was removed
// between the snapshot and the pass, and no container died, appeared or
// went between them (told by the snapshot after the pass: a container
// that finished, or was created, after the pass ended changed nothing the
// pass saw).
func changed(before, after snapshotDoc, p gcPass, removals []logEntry) string {
	for _, r := range removals {
		if r.At.After(before.TakenAt) && r.At.Before(p.Start) {
			return fmt.Sprintf("the kubelet removed %s between the snapshot and the pass (pod container deletor)", r.value("containerID"))
		}
	}
	removed := map[string]bool{}
	for _, id := range p.Removed {
		removed[id] = true
	}
	for _, r := range removals {
		if r.At.After(p.End) && !r.At.After(after.TakenAt) {
			removed[r.value("containerID")] = true // by the deletor, after the pass
		}
	}
	inBefore := map[string]string{}
	for _, c := range before.Containers {
		inBefore[c.ID] = c.State
	}
	inAfter := map[string]bool{}
	for _, c := range after.Containers {
		inAfter[c.ID] = true
		state, known := inBefore[c.ID]
		switch {
		case known && state == c.State:
		case c.State == "CONTAINER_RUNNING" && !c.CreatedAt.Before(before.TakenAt):
			// Started after the snapshot and still running: the pass
			// could not evict it.
		case !c.FinishedAt.IsZero() && c.FinishedAt.After(p.End) && known:
			// Was running throughout the pass.
		case !c.CreatedAt.Before(p.Start.Add(-minContainerTTL)):
			// Too young for the pass to consider.
		default:
			return fmt.Sprintf("container %s changed (%s → %s) between the snapshot and the pass", c.ID[:12], state, c.State)
		}
	}
	for id := range inBefore {
		if !inAfter[id] && !removed[id] {
			return fmt.Sprintf("container %s went between the snapshot and the snapshot after the pass, not by the pass", id[:12])
		}
	}
	return ""
}

// short abbreviates container IDs for messages.
func short(ids []string) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id[:min(12, len(id))]
	}
	return "[" + strings.Join(s, " ") + "]"
}

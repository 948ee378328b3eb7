package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// rollPassRemovals is about how many images the agent's pass removes in
// TestRollingUpdateMidPass.
const rollPassRemovals = 27

// rollImages is how many images of 2 MiB TestRollingUpdateMidPass
// imports: enough for the old agent's pass and the new agent's whole one
// (at a pool of 16 the old pass had started every removal, about 27,
// before the rollout's SIGTERM, and 40 left the new one short; the default
// pool of 8 starts fewer).
const rollImages = 56

// removeImageDelay slows each RemoveImage at the node's CRI socket in
// TestRollingUpdateMidPass so that, at the agent's default pool
// (engine.DefaultParallel), what is left of its pass after the first
// round of removals (the test rolls out once 3 images are removed) lasts
// about 9 s, long enough for a rollout to land in it, and each removal in
// flight ends well within the 30 s grace period: 1.5 s at a pool of 4,
// 3 s at 8, 9 s at 16.
const removeImageDelay = 9 * time.Second / time.Duration(max((rollPassRemovals+engine.DefaultParallel-1)/engine.DefaultParallel-1, 1))

// TestRollingUpdateMidPass: `kubectl rollout restart` of the DaemonSet
// while the agent's image pass is removing images loses no journal line.
// The DaemonSet controller deletes the old pod; the kubelet sends its
// agent SIGTERM, which finishes the removals in flight, journals their
// outcomes and those of the items it will not start, and exits 0 within
// the grace period; the new pod's agent, on the same state dir, finds no
// intent left open, and its own pass, once the image filesystem is past
// the high threshold again, frees down to the low one. Then every
// imported image the runtime no longer lists has its removed line, and no
// image still listed has one.
func TestRollingUpdateMidPass(t *testing.T) {
	c := sharedCluster(t)
	old := c.waitAgentReady(t)
	kubectl := kubetest.Binary(t, "kubectl")

	imgs := c.importImages(t, rollImages, 2<<20, "roll")
	if u, _ := c.usage(t); u >= imageGCHigh {
		t.Fatalf("the image filesystem is at %d%% before it is filled, at or above the high threshold %d%%", u, imageGCHigh)
	}
	// Watch the old pod from now: its last status says how its agent
	// ended.
	w, err := c.cs.CoreV1().Pods("nodegc").Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + old.Name, ResourceVersion: old.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ended := make(chan *corev1.ContainerStateTerminated, 1)
	go func() {
		var last *corev1.ContainerStateTerminated
		defer func() { ended <- last }()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if cs := pod.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
				last = cs[0].State.Terminated
			}
			if ev.Type == watch.Deleted {
				return
			}
		}
	}()

	c.proxy.SetRemoveImageDelay(removeImageDelay)
	t.Cleanup(func() { c.proxy.SetRemoveImageDelay(0) })
	c.fillPastHigh(t)

	// The pass has removed a first few images: roll out now.
	var oldPass engine.JournalPass
	if !kubetest.WaitFor(time.Minute, func() bool {
		n := 0
		for _, img := range imgs {
			if l, ok := removedLine(c.journal(t), img.ID); ok {
				n++
				oldPass = l.Pass
			}
		}
		return n >= 3
	}) {
		t.Fatalf("the agent's image pass removed fewer than 3 images within a minute of the fill; its log:\n%s", c.agentLog())
	}
	out, err := exec.Command(kubectl, "--kubeconfig="+c.cp.Admin, "-n", "nodegc", "rollout", "restart", "daemonset/nodegc").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl rollout restart: %v: %s", err, out)
	}
	rolled := time.Now()

	var term *corev1.ContainerStateTerminated
	select {
	case term = <-ended:
	case <-time.After(2 * time.Minute):
		t.Fatal("the old agent's pod was not deleted within 2 minutes of the rollout")
	}
	switch {
	case term == nil:
		t.Errorf("the old agent's pod went without a terminated status")
	case term.ExitCode != 0:
		t.Errorf("the old agent exited %d (%s), want 0: SIGTERM did not end it cleanly within the grace period", term.ExitCode, term.Reason)
	default:
		// FinishedAt is to the second.
		t.Logf("the old agent exited 0 (%s) at %s; the rollout began at %s", term.Reason, term.FinishedAt.Format(time.TimeOnly), rolled.Format("15:04:05.000"))
	}
	pod := c.waitNewAgentReady(t, old.UID)
	// The stopped pass left the usage inside the band, where no pass
	// starts. Past the high threshold again, the new agent's pass frees
	// down to the low one, on the same journal.
	c.proxy.SetRemoveImageDelay(0)
	c.fillPastHigh(t)
	// Its pass is over (and its outcome lines written) once it counts it.
	if !kubetest.WaitFor(time.Minute, func() bool {
		return metricValue(c.metrics(t, pod.Name), attemptsSeries) >= 1
	}) {
		t.Errorf("the new agent's image pass did not end within a minute of the second fill; its log:\n%s", c.agentLog())
	}
	if u, _ := c.usage(t); u > imageGCLow {
		t.Errorf("the image filesystem is at %d%% after the new agent's pass, want at most %d%%", u, imageGCLow)
	}

	lines := c.journal(t)
	if open := engine.OpenIntents(lines); len(open) > 0 {
		for _, l := range open {
			t.Errorf("intent without an outcome: pass %s %s %s", l.Pass, l.Kind, l.ID)
		}
	}
	// The started lines (written as each removal call is sent; only
	// reconciliation reads them) each have their outcome after them.
	open, started := startedWithoutOutcome(t, filepath.Join(c.dir, "state"))
	for _, l := range open {
		t.Errorf("started without an outcome: pass %s %s %s", l.Pass, l.Kind, l.ID)
	}
	if started == 0 {
		t.Errorf("the journal holds no started line")
	}
	ops := map[engine.JournalOp]int{}
	for _, l := range lines {
		if l.Pass != oldPass || l.Op == engine.JournalIntent {
			continue
		}
		ops[l.Op]++
		if l.Reconciled {
			t.Errorf("the old pass's %s %s: outcome %s written by the new agent's reconciliation; SIGTERM should have let the old agent journal it", l.Kind, l.ID, l.Op)
		}
	}
	byNew := 0
	for _, l := range c.journalAgreesWithNode(t, lines, imgs) {
		if l.Pass != oldPass {
			byNew++
		}
	}
	t.Logf("the old pass %s journalled %v; the new agent's passes removed %d more images", oldPass, ops, byNew)
	if ops[engine.JournalNotRun] == 0 && byNew == 0 {
		t.Errorf("the old pass ended before the rollout reached it (no item left unrun, nothing left for the new agent)")
	}
	// The old pod's sandbox goes at the new agent's container pass, as a
	// deleted pod's.
	if !kubetest.WaitFor(time.Minute, func() bool { return len(c.sandboxesOf(t, string(old.UID))) == 0 }) {
		t.Errorf("the old agent pod's sandbox is still there a minute after the rollout")
	}
	if t.Failed() {
		c.dump(t, &pod)
	}
}

// startedWithoutOutcome reads the journal's files in stateDir as they are
// on disk (the current one, journal.jsonl, and the segments rotated out
// of it, journal.jsonl.1 and on, oldest last) and returns the started
// lines that no outcome line of the same pass and item follows, and how
// many started lines it read.
func startedWithoutOutcome(t testing.TB, stateDir string) ([]engine.JournalEntry, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(stateDir, "journal.jsonl.*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(files) // oldest first (at most 4 segments: one digit)
	files = append(files, filepath.Join(stateDir, "journal.jsonl"))
	type key struct {
		pass engine.JournalPass
		kind engine.ItemKind
		id   string
	}
	open := map[key]engine.JournalEntry{}
	started := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		for dec.More() {
			var l engine.JournalEntry
			if err := dec.Decode(&l); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			k := key{l.Pass, l.Kind, l.ID}
			switch l.Op {
			case engine.JournalStarted:
				open[k] = l
				started++
			case engine.JournalIntent, engine.JournalCheckpoint, "":
			default:
				delete(open, k)
			}
		}
	}
	return slices.Collect(maps.Values(open)), started
}

// waitNewAgentReady waits until the DaemonSet's one pod is another than
// the pod with UID old, and Ready.
func (c *cluster) waitNewAgentReady(t *testing.T, old types.UID) corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		pods, err := c.cs.CoreV1().Pods("nodegc").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nodegc"})
		if err == nil && len(pods.Items) == 1 && string(pods.Items[0].UID) != string(old) {
			for _, cond := range pods.Items[0].Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return pods.Items[0]
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no new agent pod Ready within 2 minutes of the rollout; agent log:\n%s", c.agentLog())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

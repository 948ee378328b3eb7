package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/state"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// upgradeVersion is version B of TestUpgradeAndRollback: the same source
// stamped with another version, as make image stamps a release.
const upgradeVersion = testVersion + "-b"

// TestUpgradeAndRollback: version A (the image deploy/ was applied with)
// rolled out to B (`kubectl set image`, as `kustomize edit set image`
// then `kubectl apply -k` changes it) and back (`kubectl rollout undo`,
// the DaemonSet's previous ControllerRevision), A having journalled an
// image pass first. Each agent reports its version; no journal line is
// lost (every line before is there after, in order); and the state dir is
// read by both: B keeps the image records
// A wrote (their first-detected times) and A those B wrote, and each
// journals, on the same journal, the removal of the other's pod sandbox.
func TestUpgradeAndRollback(t *testing.T) {
	c := sharedCluster(t)
	kubectl := kubetest.Binary(t, "kubectl")
	a := c.waitAgentReady(t)
	c.checkVersion(t, a, testVersion)
	stateDir := filepath.Join(c.dir, "state")
	// A journals an image pass first, on images it saw before B's (the
	// pass removes the oldest first, and B's image must stay).
	waitRecords(t, stateDir, c.importImages(t, 20, 4<<20, "upgrade-fill"))
	archive := filepath.Join(t.TempDir(), "nodegc-image-b.tar")
	if err := makeImage(filepath.Dir(archive), upgradeVersion, archive); err != nil {
		t.Fatal(err)
	}
	c.node.Must(t).Import(archive)
	t.Cleanup(func() { c.removeImage(t, imageRepo+":"+upgradeVersion) })
	passes := metricValue(c.metrics(t, a.Name), attemptsSeries)
	c.fillPastHigh(t)
	if !kubetest.WaitFor(time.Minute, func() bool { return metricValue(c.metrics(t, a.Name), attemptsSeries) > passes }) {
		t.Fatalf("version A's image pass did not end within a minute of the fill; its log:\n%s", c.agentLog())
	}

	byA := c.importImages(t, 2, 1<<20, "upgrade-a")
	recsA := waitRecords(t, stateDir, byA)
	lines := journalAll(t, stateDir)
	if len(lines) == 0 {
		t.Fatal("the journal is empty before the upgrade")
	}

	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig=" + c.cp.Admin, "-n", "nodegc"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	sandboxesA := c.sandboxIDs(t, a)
	run("set", "image", "daemonset/nodegc", "nodegc="+imageRepo+":"+upgradeVersion)
	b := c.waitNewAgentReady(t, a.UID)
	c.checkVersion(t, b, upgradeVersion)
	byB := c.importImages(t, 2, 1<<20, "upgrade-b")
	recsB := waitRecords(t, stateDir, byB)
	keptRecords(t, "B", recsA, recsB)
	c.waitSandboxJournalled(t, a, sandboxesA, "B")

	sandboxesB := c.sandboxIDs(t, b)
	run("rollout", "undo", "daemonset/nodegc")
	back := c.waitNewAgentReady(t, b.UID)
	c.checkVersion(t, back, testVersion)
	byA2 := c.importImages(t, 2, 1<<20, "upgrade-a2")
	keptRecords(t, "A", recsB, waitRecords(t, stateDir, byA2))
	c.waitSandboxJournalled(t, b, sandboxesB, "A")

	after := journalAll(t, stateDir)
	if len(after) < len(lines) {
		t.Fatalf("the journal has %d lines after the upgrade and the rollback, %d before", len(after), len(lines))
	}
	for i := range lines {
		if !bytes.Equal(lines[i], after[i]) {
			t.Fatalf("journal line %d before the upgrade:\n%s\nafter the rollback:\n%s", i+1, lines[i], after[i])
		}
	}
	t.Logf("journal: %d lines before the upgrade, %d after the rollback", len(lines), len(after))
	if img := c.daemonSetImage(t); img != imageRef {
		t.Errorf("the DaemonSet's image after the rollback is %s, want %s", img, imageRef)
	}
}

// checkVersion checks that the agent in pod reports version.
func (c *cluster) checkVersion(t *testing.T, pod corev1.Pod, version string) {
	t.Helper()
	want := `nodegc_build_info{goversion=`
	m := c.metrics(t, pod.Name)
	for _, l := range strings.Split(string(m), "\n") {
		if strings.HasPrefix(l, want) {
			if !strings.Contains(l, fmt.Sprintf("version=%q", version)) {
				t.Errorf("the agent in %s runs %s, want version %s", pod.Name, l, version)
			}
			return
		}
	}
	t.Errorf("the agent in %s has no nodegc_build_info", pod.Name)
}

// daemonSetImage is the image of the DaemonSet's template.
func (c *cluster) daemonSetImage(t *testing.T) string {
	t.Helper()
	ds, err := c.cs.AppsV1().DaemonSets("nodegc").Get(t.Context(), "nodegc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds.Spec.Template.Spec.Containers[0].Image
}

// sandboxIDs are the IDs of the pod's sandboxes on the node.
func (c *cluster) sandboxIDs(t *testing.T, pod corev1.Pod) []string {
	t.Helper()
	var ids []string
	for _, sb := range c.sandboxesOf(t, string(pod.UID)) {
		ids = append(ids, sb.GetId())
	}
	if len(ids) == 0 {
		t.Fatalf("the agent's pod %s has no sandbox", pod.Name)
	}
	return ids
}

// waitSandboxJournalled waits until the sandboxes mine of old, a replaced
// agent's pod, are gone and their removal journalled by the agent of the
// version named.
func (c *cluster) waitSandboxJournalled(t *testing.T, old corev1.Pod, mine []string, version string) {
	t.Helper()
	if !kubetest.WaitFor(time.Minute, func() bool {
		if len(c.sandboxesOf(t, string(old.UID))) > 0 {
			return false
		}
		for _, id := range mine {
			found := false
			for _, l := range c.journal(t) {
				if l.Kind == engine.ItemSandbox && l.ID == id && l.Op == engine.JournalRemoved {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("version %s's agent did not remove and journal the replaced pod %s's sandboxes %v within a minute; its log:\n%s", version, old.Name, mine, c.agentLog())
	}
}

// waitRecords waits until the image records in stateDir hold imgs and
// returns them.
func waitRecords(t *testing.T, stateDir string, imgs []realnode.ImageRef) map[string]engine.ImageRecord {
	t.Helper()
	var recs map[string]engine.ImageRecord
	if !kubetest.WaitFor(time.Minute, func() bool {
		var err error
		if recs, _, _, err = state.LoadRecords(stateDir, time.Now(), false); err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs {
			if _, ok := recs[img.ID]; !ok {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the image records in %s lack the images imported a minute ago", stateDir)
	}
	return recs
}

// keptRecords checks that every record of before whose image the records
// still hold (now, written by the agent of the version named) has its
// first-detected time of before.
func keptRecords(t *testing.T, version string, before, now map[string]engine.ImageRecord) {
	t.Helper()
	kept := 0
	for id, r := range before {
		n, ok := now[id]
		if !ok {
			continue
		}
		kept++
		if !n.FirstDetected.Equal(r.FirstDetected) {
			t.Errorf("version %s's agent records image %s first detected at %s, the records it started with say %s", version, id, n.FirstDetected, r.FirstDetected)
		}
	}
	if kept == 0 {
		t.Errorf("version %s's agent kept none of the %d records it started with", version, len(before))
	}
}

// journalAll is every line of the journal's files in stateDir, oldest
// first, as written.
func journalAll(t *testing.T, stateDir string) [][]byte {
	t.Helper()
	var out [][]byte
	for k := state.Segments; k >= 0; k-- {
		data, err := os.ReadFile(filepath.Join(stateDir, state.SegmentName(k)))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			if !json.Valid(line) {
				t.Fatalf("%s: not a JSON line: %q", state.SegmentName(k), line)
			}
			out = append(out, bytes.TrimSpace(line))
		}
	}
	return out
}

// removeImage removes the image ref straight through the runtime's own
// socket, if it is there; a cleanup may call it.
func (c *cluster) removeImage(t *testing.T, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.node.ImageClient().RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Errorf("remove image %s: %v", ref, err)
	}
}

// TestUninstall: `kubectl delete -k deploy/` removes every object it
// created (the namespace and what is in it, the NodeGC CRD and so every
// NodeGC object, the RBAC, the admission policies), and the agent stops;
// what stays on the node is the state dir (docs/deploy.md says how to
// remove it). The suite's next test that asks for the cluster applies
// deploy/ again (sharedCluster).
func TestUninstall(t *testing.T) {
	c := sharedCluster(t)
	kubectl := kubetest.Binary(t, "kubectl")
	c.waitAgentReady(t)
	c.uninstalled = true
	out, err := exec.Command(kubectl, "--kubeconfig="+c.cp.Admin, "delete", "-k", "../../deploy", "--timeout=2m").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl delete -k deploy/: %v: %s", err, out)
	}
	t.Logf("kubectl delete -k deploy/:\n%s", out)
	left, err := exec.Command(kubectl, "--kubeconfig="+c.cp.Admin, "get", "-k", "../../deploy", "--ignore-not-found", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get -k deploy/: %v: %s", err, left)
	}
	if s := strings.TrimSpace(string(left)); s != "" {
		t.Errorf("left after kubectl delete -k deploy/:\n%s", s)
	}
	if !kubetest.WaitFor(time.Minute, func() bool {
		list, err := c.node.RuntimeClient().ListContainers(t.Context(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{"io.kubernetes.container.name": "nodegc"},
		}})
		return err == nil && len(list.GetContainers()) == 0
	}) {
		t.Errorf("the agent's container still runs a minute after kubectl delete -k deploy/")
	}
	if _, err := os.Stat(filepath.Join(c.dir, "state", state.JournalFile)); err != nil {
		t.Errorf("the state dir's journal, which stays on the node: %v", err)
	}
}

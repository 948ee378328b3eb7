package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podSourceDoc is the part of the NodeSnapshot contract these tests read.
type podSourceDoc struct {
	PodSource struct {
		Ready            bool     `json:"ready"`
		RemovablePodUIDs []string `json:"removablePodUIDs"`
		Description      string   `json:"description"`
	} `json:"podSource"`
}

// TestStaticPodWithoutMirrorPod runs a real kube-apiserver and a real
// kubelet registered with it, and two static pods: one that runs (its
// mirror pod, made by the kubelet, lists it) and one that ran to
// completion, whose mirror pod is then deleted. kubelet v1.36.3 knows the
// finished pod from its manifest, keeps its container, sandbox and log
// directory pass after pass, and does not re-create its mirror pod.
//   - With the kubelet's node name, the pod source agrees with the node:
//     the running static pod is listed through the mirror pod the kubelet
//     made (its controller is the Node).
//   - With another node name, it does not: nodegc says the source is
//     inconsistent and names the node it asked about.
//   - Over 3 of the kubelet's container-GC passes after the mirror pod is
//     deleted, nodegc's plan removes nothing of the finished static pod,
//     and the kubelet removes nothing of it either.
func TestStaticPodWithoutMirrorPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := startCluster(ctx, t, "static")
	n, nodegc, image, kubeconfig, k, cs := c.n, c.nodegc, c.image, c.kubeconfig, c.k, c.cs
	k.writeManifest(t, "web", sleepPod("web", image))
	k.writeManifest(t, "done", strings.Replace(staticPod("done", image, "work", "exit", "0"), "restartPolicy: Always", "restartPolicy: Never", 1))

	// The kubelet names a mirror pod <name>-<node> (kubecontainer
	// GetPodFullName of the static pod, pkg/kubelet/config/common.go
	// generatePodName).
	mirror := func(name string) (*corev1.Pod, error) {
		return cs.CoreV1().Pods("default").Get(ctx, name+"-"+k.nodeName, metav1.GetOptions{})
	}
	var doneUID string
	if !waitFor(3*time.Minute, func() bool {
		w, err := mirror("web")
		if err != nil || w.Status.Phase != corev1.PodRunning {
			return false
		}
		d, err := mirror("done")
		if err != nil || d.Status.Phase != corev1.PodSucceeded {
			return false
		}
		doneUID = d.Annotations[corev1.MirrorPodAnnotationKey]
		_, sandboxes, ready := podLeftovers(ctx, t, n, doneUID)
		return len(sandboxes) > 0 && !ready
	}) {
		t.Fatalf("static pod web did not run and done did not complete, with mirror pods; tail of the kubelet's log:\n%s", tail(k.logFile, 40))
	}
	logDir := filepath.Join(n.PodLogsDir(), "default_done-"+k.nodeName+"_"+doneUID)
	keptContainers, keptSandboxes, _ := podLeftovers(ctx, t, n, doneUID)
	if len(keptContainers) == 0 {
		t.Fatalf("static pod done left no container to keep")
	}
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("static pod done has no log directory: %v", err)
	}

	source := func(nodeName string) podSourceDoc {
		t.Helper()
		var doc podSourceDoc
		runNodegc(t, nodegc, n, &doc, "snapshot", "--kubeconfig", kubeconfig, "--node-name", nodeName, "--kubelet-pid", "-1")
		return doc
	}
	if got := source(k.nodeName); !got.PodSource.Ready {
		t.Errorf("with the kubelet's node name the pod source is not ready: %q (the running static pod's mirror pod must list it)", got.PodSource.Description)
	}
	if got := source("vm"); got.PodSource.Ready || !strings.Contains(got.PodSource.Description, "pod source inconsistent: node vm: 1 pods running here are not listed") {
		t.Errorf("with a wrong node name the pod source is %+v, want inconsistent, naming node vm", got.PodSource)
	}

	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "done-"+k.nodeName, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("delete the mirror pod: %v", err)
	}
	deleted := time.Now()
	if !waitFor(time.Minute, func() bool {
		_, err := mirror("done")
		return apierrors.IsNotFound(err)
	}) {
		t.Fatal("the mirror pod of done is still there after a delete with grace 0")
	}

	// The kubelet's passes after the deletion, each followed by a plan.
	for passes := 0; passes < 3; {
		var plan removalsDoc
		runNodegc(t, nodegc, n, &plan, "plan", "-o", "json", "--kubeconfig", kubeconfig, "--node-name", k.nodeName, "--kubelet-pid", "-1")
		for _, r := range plan.ContainerGC.Remove {
			if slices.Contains(keptContainers, r.ID) {
				t.Errorf("after %d kubelet passes the plan removes container %s of static pod done, whose mirror pod is deleted", passes, r.ID)
			}
		}
		for _, r := range plan.SandboxGC.Remove {
			if slices.Contains(keptSandboxes, r.ID) {
				t.Errorf("after %d kubelet passes the plan removes sandbox %s of static pod done, whose mirror pod is deleted", passes, r.ID)
			}
		}
		for _, r := range plan.LogGC.Remove {
			if strings.HasPrefix(r.Path, logDir) {
				t.Errorf("after %d kubelet passes the plan removes %s of static pod done, whose mirror pod is deleted", passes, r.Path)
			}
		}
		if t.Failed() {
			return
		}
		entries, err := readLog(k.logFile, time.Now().Year())
		if err != nil {
			t.Fatal(err)
		}
		passes = 0
		for _, p := range gcPasses(entries) {
			if p.End.After(deleted) {
				passes++
			}
		}
		if time.Since(deleted) > 5*time.Minute {
			t.Fatalf("only %d kubelet container-GC passes in 5 min", passes)
		}
		time.Sleep(15 * time.Second)
	}
	containers, sandboxes, _ := podLeftovers(ctx, t, n, doneUID)
	if !slices.Equal(containers, keptContainers) || !slices.Equal(sandboxes, keptSandboxes) {
		t.Errorf("the kubelet changed static pod done's content over 3 passes: containers %v → %v, sandboxes %v → %v", keptContainers, containers, keptSandboxes, sandboxes)
	}
	if _, err := os.Stat(logDir); err != nil {
		t.Errorf("the kubelet removed static pod done's log directory: %v", err)
	}
	if _, err := mirror("done"); !apierrors.IsNotFound(err) {
		t.Logf("the kubelet re-created the mirror pod of done (err %v)", err)
	}
}

// TestRefusedAPIServer: with the kubeconfig's server on a refused port,
// `nodegc snapshot` reports the pod source not ready with the connection
// error (not the sync timeout's "no answer": engine/podsource's refused
// row, syncing for an hour, shows the pass does not wait for it). The
// command's time is logged, not asserted: speed is a benchmark's.
func TestRefusedAPIServer(t *testing.T) {
	n := startNode(t, 0)
	nodegc := build(t, "github.com/nodegc/nodegc/cmd/nodegc", "nodegc")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: refused
  cluster:
    server: https://127.0.0.1:%d
    insecure-skip-tls-verify: true
contexts:
- name: refused
  context:
    cluster: refused
    user: nobody
users:
- name: nobody
  user: {}
current-context: refused
`, freePort(t))
	if err := os.WriteFile(kubeconfig, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var doc podSourceDoc
	runNodegc(t, nodegc, n, &doc, "snapshot", "--kubeconfig", kubeconfig, "--node-name", "n1", "--kubelet-pid", "-1")
	took := time.Since(start)
	if doc.PodSource.Ready || !strings.Contains(doc.PodSource.Description, "connection refused") {
		t.Errorf("pod source %+v, want not ready with the connection error", doc.PodSource)
	}
	t.Logf("nodegc snapshot beside a refused API server: %v, %q", took.Round(time.Millisecond), doc.PodSource.Description)
}

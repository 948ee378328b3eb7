package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/containerdapi"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestPlanMakesNoStatusCall pins issue 22 item 1: a plan costs one
// listing. It asks no container for its exit details; it learns the
// images of the node's sandboxes with containerd's one containers List
// (issue 42), and, once a command that may write the state dir kept them
// there, not even that; a sandbox new since costs the List again. plan
// itself never writes the state dir.
func TestPlanMakesNoStatusCall(t *testing.T) {
	node, ep := startSimnode(t, simnode.Options{Images: 20, Pods: 6, DeadPerContainer: 2, DeletedPods: 2})
	state := t.TempDir()
	plan := func() []string {
		t.Helper()
		node.ResetCalls()
		c := newCLI("")
		if code := c.run("plan", "-o", "json", "--simulated", "--runtime-endpoint", ep, "--state-dir", state); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		return node.Calls()
	}
	count := func(calls []string, method string) int {
		n := 0
		for _, m := range calls {
			if strings.HasSuffix(m, "/"+method) {
				n++
			}
		}
		return n
	}

	bulk := func(calls []string) int {
		return strings.Count(strings.Join(calls, "\n"), containerdapi.ListMethod)
	}

	first := plan()
	if n := count(first, "ContainerStatus"); n != 0 {
		t.Errorf("the first plan made %d ContainerStatus calls, want none", n)
	}
	// containerd's containers List names the six READY sandboxes' images
	// in one call (the simulated node serves it as containerd does).
	if n := count(first, "PodSandboxStatus"); n != 0 {
		t.Errorf("the first plan made %d PodSandboxStatus calls, want none (the images in bulk)", n)
	}
	if n := bulk(first); n != 1 {
		t.Errorf("the first plan made %d containers List calls, want one for every READY sandbox", n)
	}
	if _, err := os.Stat(state + "/sandbox-images.json"); err == nil {
		t.Fatal("plan, a read-only command, wrote the sandbox images into the state dir")
	}
	// A gc that removes nothing (usage is below a high threshold of 100)
	// learns the images and keeps them.
	learn := func() {
		t.Helper()
		c := newCLI("")
		if code := c.run("gc", "--images", "--yes", "--image-gc-high-threshold=100", "--image-gc-low-threshold=99", "--simulated", "--runtime-endpoint", ep, "--state-dir", state); code != 0 {
			t.Fatalf("gc: exit %d: %s", code, c.err.String())
		}
	}
	learn()
	if _, err := os.Stat(state + "/sandbox-images.json"); err != nil {
		t.Fatalf("gc did not keep the sandbox images in the state dir: %v", err)
	}

	t.Run("a later plan asks no status at all", func(t *testing.T) {
		calls := plan()
		for _, m := range []string{"ContainerStatus", "PodSandboxStatus"} {
			if n := count(calls, m); n != 0 {
				t.Errorf("%d %s calls, want none: %v", n, m, calls)
			}
		}
		if n := bulk(calls); n != 0 {
			t.Errorf("%d containers List calls, want none: %v", n, calls)
		}
	})
	t.Run("a new sandbox costs one bulk call until a gc keeps it", func(t *testing.T) {
		conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		md := &runtimeapi.PodSandboxMetadata{Name: "new-pod", Namespace: "default", Uid: "uid-new-pod"}
		if _, err := runtimeapi.NewRuntimeServiceClient(conn).RunPodSandbox(context.Background(),
			&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: md}}); err != nil {
			t.Fatal(err)
		}
		calls := plan()
		if n, m := count(calls, "PodSandboxStatus"), bulk(calls); n != 0 || m != 1 {
			t.Errorf("%d PodSandboxStatus and %d containers List calls, want 0 and 1 (for the new sandbox)", n, m)
		}
		learn()
		calls = plan()
		if n, m := count(calls, "PodSandboxStatus"), bulk(calls); n != 0 || m != 0 {
			t.Errorf("%d PodSandboxStatus and %d containers List calls the next time, want none", n, m)
		}
	})
	t.Run("the sandboxes are listed once", func(t *testing.T) {
		if n := count(plan(), "ListPodSandbox"); n != 1 {
			t.Errorf("%d ListPodSandbox calls, want 1", n)
		}
	})
	t.Run("listings only", func(t *testing.T) {
		calls := plan()
		slices.Sort(calls)
		calls = slices.Compact(calls)
		for _, m := range calls {
			if strings.Contains(m, "Status") && !strings.HasSuffix(m, "/Status") && !strings.HasSuffix(m, "/ImageFsInfo") {
				t.Errorf("the plan called %s", m)
			}
		}
	})
}

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestSandboxImagesInBulk pins issue 42 item 2 on the real containerd: its
// containers service, on the CRI socket, names in one List the image of
// every READY sandbox, the same as that sandbox's verbose PodSandboxStatus
// info "image", for a sandbox made before a change of the configured
// sandbox image too; so a cold Info (no image known) asks no sandbox one by
// one. The count is the client's own (its --debug line): the runtime
// records no calls.
func TestSandboxImagesInBulk(t *testing.T) { forEachRuntime(t, testSandboxImagesInBulk) }

func testSandboxImagesInBulk(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	ctx := context.Background()
	old := m.RunPod("bulk-old", "default", "uid-bulk-old", "besteffort")
	// The sandbox image changes, as in a cluster upgrade: sandboxes made
	// after run the new one, the one made before still runs the old.
	newRef := "registry.k8s.io/pause:h42b-changed"
	m.Ctr("images", "tag", realnode.SandboxImageRef, newRef)
	if err := n.ConfigureSandboxImage(newRef); err != nil {
		t.Fatal(err)
	}
	fresh := m.RunPod("bulk-new", "default", "uid-bulk-new", "besteffort")
	stopped := m.RunPod("bulk-stopped", "default", "uid-bulk-stopped", "besteffort")
	m.StopPod(stopped)

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := cri.Dial(dctx, n.Endpoint(), cri.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sbs, err := c.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := c.InfoFor(ctx, sbs)
	if err != nil {
		t.Fatal(err)
	}
	var line struct{ Ready, Known, Bulk, Asked int }
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("debug line %q: %v", buf.Bytes(), err)
	}
	if line.Ready != 2 || line.Bulk != 2 || line.Asked != 0 {
		t.Errorf("cold Info: %+v; want the 2 READY sandboxes in bulk, none asked", line)
	}
	learned, _ := c.SandboxImages()
	want := map[string]string{old: realnode.SandboxImageRef, fresh: newRef}
	for id, im := range want {
		resp, err := n.RuntimeClient().PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		var info struct{ Image string }
		if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
			t.Fatalf("sandbox %s info: %v", id, err)
		}
		if learned[id] != info.Image || info.Image != im {
			t.Errorf("sandbox %s: bulk %q, PodSandboxStatus %q, want %q", id, learned[id], info.Image, im)
		}
	}
	if _, ok := learned[stopped]; ok {
		t.Errorf("the stopped sandbox's image was kept: %v", learned)
	}
	if !slices.Contains(ri.SandboxImages, realnode.SandboxImageRef) || !slices.Contains(ri.SandboxImages, newRef) {
		t.Errorf("sandbox images %v lack the old %s or the new %s", ri.SandboxImages, realnode.SandboxImageRef, newRef)
	}
}

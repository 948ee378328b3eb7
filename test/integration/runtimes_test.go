package integration

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestRuntimeDifferences pins what differs between containerd 1.6 and 2.x
// as nodegc sees it, on a node with no pod running (so the only source for
// the sandbox image is what the runtime says of it):
//   - containerd 2 lists its sandbox image as pinned (pinned_images.sandbox
//     in its version 3 config); 1.6 does not pin it, which is why nodegc
//     also learns the sandbox image from the runtime's config;
//   - 1.6's verbose Status config names the sandbox image (sandboxImage);
//     2.2's does not name it anywhere (the images config is not in it);
//   - either way nodegc keeps it: on 2.x as pinned by the runtime, on 1.6
//     as the sandbox image, unpinned; a reclaim-all plan leaves it.
//
// What does not differ is pinned too: ImageFsInfo names the snapshotter's
// directory on the image filesystem, and CRI reports an image's size as
// its manifest, config and layer bytes, on both.
func TestRuntimeDifferences(t *testing.T) { forEachRuntime(t, testRuntimeDifferences) }

func testRuntimeDifferences(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	ctx := context.Background()
	pause := n.SandboxImage()
	others := m.ImportImages(2, 0, "diff")

	t.Run("containerd 2 pins the sandbox image and 1.6 does not", func(t *testing.T) {
		st, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: pause.ID}})
		if err != nil {
			t.Fatalf("image status: %v", err)
		}
		if got, want := st.GetImage().GetPinned(), rt.PinsSandboxImage(); got != want {
			t.Errorf("sandbox image pinned = %v, want %v on %s", got, want, rt.Name)
		}
		list, err := n.ImageClient().ListImages(ctx, &runtimeapi.ListImagesRequest{})
		if err != nil {
			t.Fatalf("list images: %v", err)
		}
		for _, img := range list.GetImages() {
			if want := img.GetId() == pause.ID && rt.PinsSandboxImage(); img.GetPinned() != want {
				t.Errorf("%v listed pinned = %v, want %v", img.GetRepoTags(), img.GetPinned(), want)
			}
		}
	})

	t.Run("only containerd 1.6 names the sandbox image in its verbose status config", func(t *testing.T) {
		resp, err := n.RuntimeClient().Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		cfg := resp.GetInfo()["config"]
		if cfg == "" {
			t.Fatalf("no config in the verbose status: keys %v", keys(resp.GetInfo()))
		}
		names := strings.Contains(cfg, `"sandboxImage":"`+realnode.SandboxImageRef+`"`)
		if want := rt.Major() == 1; names != want {
			t.Errorf("config names sandboxImage %s: %v, want %v on %s: %.400s", realnode.SandboxImageRef, names, want, rt.Name, cfg)
		}
		if rt.Major() >= 2 && strings.Contains(cfg, realnode.SandboxImageRef) {
			t.Errorf("containerd 2's config names the sandbox image after all; nodegc could read it: %.400s", cfg)
		}
	})

	t.Run("nodegc keeps the sandbox image: as pinned on 2.x, as the unpinned sandbox image on 1.6", func(t *testing.T) {
		e := newEngine(t, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy(), StateDir: t.TempDir()})
		s, p, err := e.PlanAt(ctx, engine.PassReclaimAll, time.Now().Add(engine.DefaultImageMinimumGCAge+time.Minute))
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		learned := slices.Contains(s.Runtime.SandboxImages, realnode.SandboxImageRef)
		if want := rt.Major() == 1; learned != want {
			t.Errorf("snapshot's sandbox images %v: names %s = %v, want %v (no sandbox runs; only 1.6's config names it)",
				s.Runtime.SandboxImages, realnode.SandboxImageRef, learned, want)
		}
		// 2.x: pinned, and not known as the sandbox image (no sandbox runs,
		// the config does not name it). 1.6: the sandbox image, unpinned.
		want := engine.ImageKeep{ID: pause.ID, Reason: engine.KeepSandboxImage, Detail: engine.DetailSandboxImageUnpinned}
		if rt.PinsSandboxImage() {
			want.Reason, want.Detail = engine.KeepPinned, engine.DetailPinned
		}
		var keep *engine.ImageKeep
		for i := range p.ImageGC.Keep {
			if p.ImageGC.Keep[i].ID == pause.ID {
				keep = &p.ImageGC.Keep[i]
			}
		}
		if keep == nil || keep.Reason != want.Reason || keep.Detail != want.Detail {
			t.Errorf("sandbox image kept as %+v, want reason %s detail %q", keep, want.Reason, want.Detail)
		}
		var removed []string
		for _, r := range p.ImageGC.Remove {
			removed = append(removed, r.ID)
		}
		slices.Sort(removed)
		unused := ids(others)
		slices.Sort(unused)
		if !slices.Equal(removed, unused) {
			t.Errorf("reclaim-all plan removes %v, want the two unused images %v", removed, unused)
		}
	})

	t.Run("ImageFsInfo names the snapshotter's directory on the image filesystem on both", func(t *testing.T) {
		resp, err := n.ImageClient().ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
		if err != nil {
			t.Fatalf("image fs info: %v", err)
		}
		want := filepath.Join(n.Root(), "io.containerd.snapshotter.v1."+n.Snapshotter())
		fss := resp.GetImageFilesystems()
		if len(fss) != 1 || fss[0].GetFsId().GetMountpoint() != want {
			t.Errorf("image filesystems %v, want one at %s", fss, want)
		}
	})

	t.Run("CRI reports an image's size as its manifest, config and layer bytes on both", func(t *testing.T) {
		for _, img := range append([]realnode.ImageRef{pause}, others...) {
			st, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img.ID}})
			if err != nil {
				t.Fatalf("image status %s: %v", img.Ref, err)
			}
			if got := int64(st.GetImage().GetSize()); got != img.Size {
				t.Errorf("%s: size %d, want %d", img.Ref, got, img.Size)
			}
		}
	})
}

// keys returns the sorted keys of a map, for messages.
func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

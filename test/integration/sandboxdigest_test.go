package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/realnode"
)

// TestSandboxImageConfiguredByDigest pins issue 8 item 1 on the real
// containerd: its sandbox image configured as name:tag@digest, the image
// listed as name@digest only (as after a pull by digest), no sandbox
// running it. `nodegc gc --reclaim-all --yes` removes the other unused
// images and keeps the sandbox image.
func TestSandboxImageConfiguredByDigest(t *testing.T) {
	forEachRuntime(t, testSandboxImageConfiguredByDigest)
}

func testSandboxImageConfiguredByDigest(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	ctx := context.Background()
	pause := n.SandboxImage()
	// The digest of the image's manifest: ctr lists it as the target.
	var digest string
	for _, line := range strings.Split(string(m.Ctr("images", "ls")), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == realnode.SandboxImageRef {
			digest = f[2]
		}
	}
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("no manifest digest for %s in ctr images ls", realnode.SandboxImageRef)
	}
	byDigest := "registry.k8s.io/pause@" + digest
	m.Ctr("images", "tag", realnode.SandboxImageRef, byDigest)
	m.Ctr("images", "rm", realnode.SandboxImageRef)
	if err := n.ConfigureSandboxImage(realnode.SandboxImageRef + "@" + digest); err != nil {
		t.Fatal(err)
	}
	if !realnode.Eventually(15*time.Second, func() bool {
		st, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: pause.ID}})
		return err == nil && st.GetImage() != nil && len(st.GetImage().GetRepoTags()) == 0
	}) {
		t.Fatal("the sandbox image is still listed by its tag")
	}
	others := m.ImportImages(2, 0, "digest")
	state := t.TempDir()
	detectAt(t, n, c, state, time.Now().Add(-time.Hour))

	res := runCLI(t, append([]string{"gc", "--reclaim-all", "--yes"}, cliFlags(t, n, state)...)...)
	if res.Code != 0 {
		t.Fatalf("gc: exit %d: %s", res.Code, res.Stderr)
	}
	images := m.State().Images
	if !slices.Contains(images, pause.ID) {
		t.Errorf("the sandbox image %s (configured as %s@%s) was removed", pause.ID, realnode.SandboxImageRef, digest)
	}
	for _, img := range others {
		if slices.Contains(images, img.ID) {
			t.Errorf("unused image %s was kept; the pass did not run", img.Ref)
		}
	}
}

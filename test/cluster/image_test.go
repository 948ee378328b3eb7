package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// testVersion is the version the test image's binary reports.
const testVersion = "v0.0.0-cluster-test"

// imageRepo is the image's repository, as deploy/ names it; imageRef is
// the test image's reference.
const (
	imageRepo = "ghcr.io/nodegc/nodegc"
	imageRef  = imageRepo + ":" + testVersion
)

var (
	imageOnce    sync.Once
	imageArchive string
	imageErr     error
)

// buildImage writes the image as make image does (the same go build flags
// and tools/mkimage) once per test process, into a temp dir TestMain
// (suite_test.go) removes.
func buildImage(t testing.TB) string {
	t.Helper()
	imageOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodegc-image-")
		if err != nil {
			imageErr = err
			return
		}
		imageArchive = filepath.Join(dir, "nodegc-image.tar")
		imageErr = makeImage(dir, testVersion, imageArchive)
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageArchive
}

// makeImage writes the image of the version, tagged with it as make image
// tags it, to archive, building its binary in dir.
func makeImage(dir, version, archive string) error {
	bin := filepath.Join(dir, "nodegc")
	for _, args := range [][]string{
		{"build", "-trimpath", "-ldflags", "-s -w -X main.version=" + version, "-o", bin, "github.com/nodegc/nodegc/cmd/nodegc"},
		{"run", "github.com/nodegc/nodegc/tools/mkimage", "--binary", bin, "--ref", imageRepo + ":" + version, "--version", version, "-o", archive},
	} {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "SOURCE_DATE_EPOCH=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v: %s", args[0], err, out)
		}
	}
	return nil
}

// TestImageImportsAndRuns: the archive imports into a real containerd
// (1.6 and 2.2) with ctr, under its tag, and its binary runs there
// (`nodegc --version`, no shell, no libc).
func TestImageImportsAndRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		kubetest.SkipOrFail(t, "a real containerd needs root (running as uid %d)", os.Geteuid())
	}
	archive := buildImage(t)
	for _, rt := range realnode.Runtimes() {
		t.Run(rt.Name, func(t *testing.T) {
			n := realnode.Start(t, realnode.Options{Runtime: rt})
			m := n.Must(t)
			m.Import(archive)
			if out := string(m.Ctr("images", "ls", "-q")); !strings.Contains(out, imageRef) {
				t.Fatalf("ctr images ls does not list %s:\n%s", imageRef, out)
			}
			out := string(m.Ctr("run", "--rm", "--snapshotter", n.Snapshotter(), imageRef, "nodegc-version-"+strings.ReplaceAll(rt.Version, ".", ""), "/nodegc", "--version"))
			if !strings.Contains(out, testVersion) {
				t.Errorf("nodegc --version in the image printed %q, want %s", out, testVersion)
			}
		})
	}
}

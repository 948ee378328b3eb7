package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// forEachRuntime runs body once per runtime of Runtimes, in a subtest named
// after it.
func forEachRuntime(t *testing.T, body func(t *testing.T, rt Runtime)) {
	t.Helper()
	for _, rt := range Runtimes() {
		t.Run(rt.Name, func(t *testing.T) { body(t, rt) })
	}
}

// TestNode drives one real containerd through what the integration tests
// need: imports, pods, running and dead containers, the image filesystem and
// a crash with restart. The subtests share the node and run in order.
func TestNode(t *testing.T) { forEachRuntime(t, testNode) }

func testNode(t *testing.T, rt Runtime) {
	n := Start(t, Options{Runtime: rt})
	m := n.Must(t)
	ctx := context.Background()

	t.Run("the node runs the runtime it was asked for", func(t *testing.T) {
		v, err := n.RuntimeClient().Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			t.Fatalf("version: %v", err)
		}
		got := strings.TrimPrefix(v.GetRuntimeVersion(), "v")
		if v.GetRuntimeName() != "containerd" || !strings.HasPrefix(got, rt.Version+".") {
			t.Errorf("CRI reports %s %s, want containerd %s.x", v.GetRuntimeName(), v.GetRuntimeVersion(), rt.Version)
		}
		if n.Runtime() != rt {
			t.Errorf("Runtime() = %+v, want %+v", n.Runtime(), rt)
		}
	})

	const size = 16 << 20
	before := m.ImageFsUsage()
	imgs := m.ImportImages(3, size, "node")

	t.Run("imported images are listed by CRI with the built ID and size", func(t *testing.T) {
		for _, img := range imgs {
			resp, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img.Ref}})
			if err != nil {
				t.Fatalf("image status %s: %v", img.Ref, err)
			}
			got := resp.GetImage()
			if got.GetId() != img.ID || int64(got.GetSize()) != img.Size {
				t.Errorf("%s: CRI has id %s size %d, built id %s size %d", img.Ref, got.GetId(), got.GetSize(), img.ID, img.Size)
			}
			if got.GetSize() < size-4096 {
				t.Errorf("%s: size %d, want about %d", img.Ref, got.GetSize(), size)
			}
		}
	})

	t.Run("image filesystem grows by at least the imported sizes", func(t *testing.T) {
		after := m.ImageFsUsage()
		if after.Capacity != DefaultImageFsSize {
			t.Errorf("capacity %d, want the tmpfs size %d", after.Capacity, DefaultImageFsSize)
		}
		// Each image is stored twice: the layer blob and its unpacked snapshot.
		if grew := after.Used - before.Used; grew < 2*3*size {
			t.Errorf("used grew by %d bytes, want at least %d", grew, 2*3*size)
		}
	})

	t.Run("sandbox image is the configured sandbox_image", func(t *testing.T) {
		resp, err := n.RuntimeClient().Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		// containerd 1.6 names it in its verbose config; containerd 2 does
		// not, and pins it instead (pinned_images.sandbox).
		if cfg := resp.GetInfo()["config"]; rt.Major() == 1 && !strings.Contains(cfg, `"sandboxImage":"`+SandboxImageRef+`"`) {
			t.Errorf("CRI config does not name %s as sandbox image: %.300s", SandboxImageRef, cfg)
		}
		st, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: SandboxImageRef}})
		if err != nil {
			t.Fatalf("image status: %v", err)
		}
		if got := st.GetImage().GetPinned(); got != rt.PinsSandboxImage() {
			t.Errorf("sandbox image pinned = %v, want %v", got, rt.PinsSandboxImage())
		}
		if n.SandboxImage().Ref != SandboxImageRef || n.SandboxImage().ID == "" {
			t.Errorf("SandboxImage() = %+v", n.SandboxImage())
		}
	})

	uid := "6f1c2b1e-0000-4000-8000-000000000001"
	sb := m.RunPod("web", "default", uid, QOSBestEffort)
	running := m.StartContainer(sb, "app", imgs[0].Ref, 0)
	exited := m.ExitedContainer(sb, "job", imgs[1].Ref, 0, 3)

	t.Run("pod runs a running and an exited container with the kubelet's labels", func(t *testing.T) {
		pod, err := n.RuntimeClient().PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
		if err != nil {
			t.Fatalf("sandbox status: %v", err)
		}
		if st := pod.GetStatus(); st.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || st.GetLabels()[LabelPodUID] != uid {
			t.Errorf("sandbox state %s labels %v, want READY with uid %s", st.GetState(), st.GetLabels(), uid)
		}
		for _, c := range []struct {
			id, name, image string
			state           runtimeapi.ContainerState
			exitCode        int32
		}{
			{running, "app", imgs[0].ID, runtimeapi.ContainerState_CONTAINER_RUNNING, 0},
			{exited, "job", imgs[1].ID, runtimeapi.ContainerState_CONTAINER_EXITED, 3},
		} {
			resp, err := n.RuntimeClient().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.id})
			if err != nil {
				t.Fatalf("container status %s: %v", c.name, err)
			}
			st := resp.GetStatus()
			if st.GetState() != c.state || st.GetExitCode() != c.exitCode {
				t.Errorf("%s: state %s exit %d, want %s exit %d", c.name, st.GetState(), st.GetExitCode(), c.state, c.exitCode)
			}
			if st.GetImageRef() != c.image && st.GetImageId() != c.image {
				t.Errorf("%s: image ref %q id %q, want %s", c.name, st.GetImageRef(), st.GetImageId(), c.image)
			}
			if st.GetLabels()[LabelPodUID] != uid || st.GetLabels()[LabelContainerName] != c.name {
				t.Errorf("%s: labels %v", c.name, st.GetLabels())
			}
			want := filepath.Join(n.PodLogsDir(), "default_web_"+uid, c.name, "0.log")
			if st.GetLogPath() != want {
				t.Errorf("%s: log path %q, want %q", c.name, st.GetLogPath(), want)
			}
			if b, err := os.ReadFile(want); err != nil || !strings.Contains(string(b), "nodegc-testbin") {
				t.Errorf("%s: log %s: %q, %v", c.name, want, b, err)
			}
		}
	})

	t.Run("pod gets a kubepods cgroup of its QoS class", func(t *testing.T) {
		dirs := podCgroupDirs(t, "/kubepods/besteffort/pod"+uid)
		if len(dirs) == 0 {
			t.Fatalf("no cgroup /kubepods/besteffort/pod%s in any hierarchy", uid)
		}
	})

	t.Run("running the same pod again makes its next attempt", func(t *testing.T) {
		sb2 := m.RunPod("web", "default", uid, QOSBestEffort)
		m.StopPod(sb2)
		resp, err := n.RuntimeClient().PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb2})
		if err != nil {
			t.Fatalf("sandbox status: %v", err)
		}
		if got := resp.GetStatus().GetMetadata().GetAttempt(); got != 1 {
			t.Errorf("attempt %d, want 1", got)
		}
		if got := resp.GetStatus().GetState(); got != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("stopped sandbox is %s, want NOTREADY", got)
		}
	})

	t.Run("State lists what CRI holds", func(t *testing.T) {
		s := m.State()
		if !slices.Contains(s.Images, imgs[0].ID) || !slices.Contains(s.Images, n.SandboxImage().ID) || len(s.Images) != 4 {
			t.Errorf("images %v, want the 3 imported and the sandbox image", s.Images)
		}
		if s.Containers[running] != "CONTAINER_RUNNING" || s.Containers[exited] != "CONTAINER_EXITED" || s.Sandboxes[sb] != "SANDBOX_READY" {
			t.Errorf("state %+v", s)
		}
	})

	t.Run("ctr removes an image behind CRI's back only with its ID name too", func(t *testing.T) {
		extra := m.ImportImages(1, 1<<20, "ctr")
		// CRI names each image it learns of by its ID as well, so removing
		// the tag leaves the image listed, untagged.
		// CRI learns of ctr's deletions through events: poll.
		m.Ctr("images", "rm", "--sync", extra[0].Ref)
		var img *runtimeapi.Image
		untagged := Eventually(10*time.Second, func() bool {
			resp, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: extra[0].ID}})
			img = resp.GetImage()
			return err == nil && img != nil && len(img.GetRepoTags()) == 0
		})
		if !untagged {
			t.Errorf("after ctr rm of the tag: image %v, want it listed without tags", img)
		}
		m.Ctr("images", "rm", "--sync", extra[0].ID)
		if !Eventually(10*time.Second, func() bool { return !slices.Contains(m.State().Images, extra[0].ID) }) {
			t.Errorf("image %s still listed after ctr images rm of its ID", extra[0].Ref)
		}
	})

	t.Run("CRI RemoveImage frees the image filesystem synchronously", func(t *testing.T) {
		u0 := m.ImageFsUsage()
		if _, err := n.ImageClient().RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: imgs[2].ID}}); err != nil {
			t.Fatalf("remove image: %v", err)
		}
		u1 := m.ImageFsUsage()
		if freed := u0.Used - u1.Used; freed < 2*size {
			t.Errorf("freed %d bytes right after RemoveImage, want at least %d", freed, 2*size)
		}
	})

	t.Run("a killed containerd is unavailable, then restarts with its containers", func(t *testing.T) {
		m.Stop()
		if n.Running() {
			t.Error("Running() after Stop")
		}
		_, err := n.RuntimeClient().Version(ctx, &runtimeapi.VersionRequest{})
		if status.Code(err) != codes.Unavailable {
			t.Errorf("Version while stopped: %v, want Unavailable", err)
		}
		m.Restart()
		resp, err := n.RuntimeClient().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: running})
		if err != nil {
			t.Fatalf("container status after restart: %v", err)
		}
		if got := resp.GetStatus().GetState(); got != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container after restart is %s, want RUNNING", got)
		}
	})

	t.Run("stopping the pod leaves it NOTREADY with exited containers", func(t *testing.T) {
		m.StopPod(sb)
		resp, err := n.RuntimeClient().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: running})
		if err != nil {
			t.Fatalf("container status: %v", err)
		}
		if got := resp.GetStatus().GetState(); got != runtimeapi.ContainerState_CONTAINER_EXITED {
			t.Errorf("container of a stopped pod is %s, want EXITED", got)
		}
	})
}

// eventually reports whether cond becomes true within 10 seconds. The real
// podCgroupDirs lists the existing directories of a cgroup across the
// mounted hierarchies.
func podCgroupDirs(t *testing.T, cgroup string) []string {
	t.Helper()
	ms, err := mountInfo()
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range ms {
		if m.fstype != "cgroup" && m.fstype != "cgroup2" {
			continue
		}
		if fi, err := os.Stat(filepath.Join(m.point, cgroup)); err == nil && fi.IsDir() {
			dirs = append(dirs, filepath.Join(m.point, cgroup))
		}
	}
	return dirs
}

// processesReferencing lists the live processes whose command line names dir.
func processesReferencing(dir string) []int {
	var pids []int
	for _, p := range listProcs() {
		if p.state != 'Z' && references(p.cmdline, dir) {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// checkGone asserts that a node's dir left nothing behind: no mounts, no
// processes, no pod cgroup, no directory.
func checkGone(t *testing.T, dir, podCgroup string) {
	t.Helper()
	if ms, err := MountsUnder(dir); err != nil || len(ms) > 0 {
		t.Errorf("still mounted under %s: %v (%v)", dir, ms, err)
	}
	if pids := processesReferencing(dir); len(pids) > 0 {
		t.Errorf("processes of %s still alive: %v", dir, pids)
	}
	if dirs := podCgroupDirs(t, podCgroup); len(dirs) > 0 {
		t.Errorf("pod cgroups left: %v", dirs)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (%v)", dir, err)
	}
}

func TestCloseLeavesNothingBehind(t *testing.T) { forEachRuntime(t, testCloseLeavesNothingBehind) }

func testCloseLeavesNothingBehind(t *testing.T, rt Runtime) {
	n := Start(t, Options{ImageFsSize: 64 << 20, Runtime: rt})
	m := n.Must(t)
	uid := "6f1c2b1e-0000-4000-8000-000000000002"
	sb := m.RunPod("teardown", "default", uid, QOSGuaranteed)
	m.StartContainer(sb, "app", SandboxImageRef, 0)
	m.ExitedContainer(sb, "job", SandboxImageRef, 0, 1)
	dir := n.Dir()
	if ms, _ := MountsUnder(dir); len(ms) < 3 {
		t.Fatalf("want the tmpfs, sandbox shm and rootfs mounts under %s before Close, have %v", dir, ms)
	}
	shim := shimSocket(strings.Join([]string{"containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", sb, "-address", n.Socket()}, "\x00"))
	if _, err := os.Stat(shim); err != nil {
		t.Fatalf("shim socket %s: %v", shim, err)
	}

	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	checkGone(t, dir, "/kubepods/pod"+uid)
	if _, err := os.Stat(shim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("shim socket %s left behind (%v)", shim, err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// crashEnv makes the test binary, re-run by TestCrashedOwnerIsCleanedUp, run
// a node and exit without any cleanup, as a test binary killed by a timeout.
const crashEnv = "REALNODE_TEST_CRASH"

func TestCrashHelper(t *testing.T) {
	name := os.Getenv(crashEnv)
	if name == "" {
		t.Skip("helper process for TestCrashedOwnerIsCleanedUp")
	}
	rt, err := RuntimeNamed(name)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	n, err := Launch(context.Background(), Options{ImageFsSize: 32 << 20, Runtime: rt})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	sb, err := n.RunPod("crash", "default", "6f1c2b1e-0000-4000-8000-000000000003", QOSBurstable)
	if err == nil {
		_, err = n.StartContainer(sb, "app", SandboxImageRef, 0)
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println("DIR", n.Dir())
	os.Exit(3)
}

func TestCrashedOwnerIsCleanedUp(t *testing.T) { forEachRuntime(t, testCrashedOwnerIsCleanedUp) }

func testCrashedOwnerIsCleanedUp(t *testing.T, rt Runtime) {
	if err := ensureTools(context.Background(), rt, t.Logf); err != nil {
		Start(t, Options{Runtime: rt}) // skips or fails with the reason
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+rt.Name)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("helper: %v, output:\n%s", err, out)
	}
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		if d, ok := strings.CutPrefix(line, "DIR "); ok {
			dir = d
		}
	}
	if ms, _ := MountsUnder(dir); dir == "" || len(ms) == 0 {
		t.Fatalf("helper left no node to clean (dir %q, mounts %v); output:\n%s", dir, ms, out)
	}
	t.Cleanup(func() { _ = Cleanup(dir) })

	Start(t, Options{ImageFsSize: 32 << 20, Runtime: rt})
	checkGone(t, dir, "/kubepods/burstable/pod6f1c2b1e-0000-4000-8000-000000000003")
}

func TestStartWithoutPrerequisites(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("runs only as a non-root user, where Launch must refuse")
	}
	_, err := Launch(context.Background(), Options{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Launch without root: %v, want ErrUnavailable", err)
	}
}

func BenchmarkLaunchClose(b *testing.B) {
	for b.Loop() {
		n := Start(b, Options{ImageFsSize: 64 << 20})
		if err := n.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkImportImages(b *testing.B) {
	n := Start(b, Options{ImageFsSize: 1 << 30})
	i := 0
	for b.Loop() {
		imgs, err := n.ImportImages(10, 1<<20, fmt.Sprintf("bench%d", i))
		if err != nil {
			b.Fatal(err)
		}
		i++
		for _, img := range imgs {
			if _, err := n.ImageClient().RemoveImage(context.Background(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: img.ID}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/10, "ms/image")
}

package simnode

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/critest"
)

// socketDir returns a short temporary directory (unix socket paths are
// limited to 108 bytes).
func socketDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "simnode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

type clients struct {
	rt  runtimeapi.RuntimeServiceClient
	img runtimeapi.ImageServiceClient
}

// start serves n on a fresh socket and returns CRI clients for it.
func start(t *testing.T, n *Node) (clients, string) {
	t.Helper()
	ep := "unix://" + filepath.Join(socketDir(t), "cri.sock")
	l, err := Listen(ep)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(l) }()
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(512<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		n.Stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return clients{runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)}, ep
}

func small(seed int64) Options {
	return Options{Seed: seed, Images: 10, Pods: 3, ContainersPerPod: 2, DeadPerContainer: 2, DeletedPods: 1, StaleSandboxes: 1}
}

// dump lists everything a node serves, through its handlers.
func dump(t *testing.T, n *Node) (images []*runtimeapi.Image, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) {
	t.Helper()
	ctx := context.Background()
	im, err := (&imageService{n: n}).ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := (&runtimeService{n: n}).ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := (&runtimeService{n: n}).ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return im.Images, sb.Items, ks.Containers
}

func sameNode(t *testing.T, a, b *Node) bool {
	t.Helper()
	ai, as, ac := dump(t, a)
	bi, bs, bc := dump(t, b)
	eq := func(x, y proto.Message) bool { return proto.Equal(x, y) }
	return slices.EqualFunc(ai, bi, func(x, y *runtimeapi.Image) bool { return eq(x, y) }) &&
		slices.EqualFunc(as, bs, func(x, y *runtimeapi.PodSandbox) bool { return eq(x, y) }) &&
		slices.EqualFunc(ac, bc, func(x, y *runtimeapi.Container) bool { return eq(x, y) }) &&
		a.FsStats() == b.FsStats() && slices.Equal(a.RemovablePods(), b.RemovablePods())
}

func TestDeterminism(t *testing.T) {
	steps := func(n *Node) *Node {
		for i := 1; i <= 40; i++ {
			n.Step(DefaultStart.Add(time.Duration(i) * time.Second))
		}
		return n
	}
	t.Run("the same seed gives the same node", func(t *testing.T) {
		if !sameNode(t, New(Demo(7)), New(Demo(7))) {
			t.Error("two nodes from Demo(7) differ")
		}
	})
	t.Run("the same seed and steps give the same workload", func(t *testing.T) {
		if !sameNode(t, steps(New(Demo(7))), steps(New(Demo(7)))) {
			t.Error("two nodes from Demo(7) differ after 40 steps")
		}
	})
	t.Run("another seed gives another node", func(t *testing.T) {
		if sameNode(t, New(Demo(7)), New(Demo(8))) {
			t.Error("Demo(7) and Demo(8) are the same")
		}
	})
	t.Run("every generated object is older than Start", func(t *testing.T) {
		_, sb, ks := dump(t, New(Demo(7)))
		for _, s := range sb {
			if s.CreatedAt >= DefaultStart.UnixNano() {
				t.Errorf("sandbox %s created at %v", s.Id, time.Unix(0, s.CreatedAt))
			}
		}
		for _, k := range ks {
			if k.CreatedAt >= DefaultStart.UnixNano() {
				t.Errorf("container %s created at %v", k.Id, time.Unix(0, k.CreatedAt))
			}
		}
	})
}

func TestGeneratedShape(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want Counts
	}{
		{"the zero options give only the sandbox image", Options{}, Counts{Images: 1}},
		{"small node", small(1), Counts{Images: 11, Sandboxes: 5, ReadySandboxes: 3, Containers: 24, Running: 6, Exited: 18}},
		{"demo", Demo(1), Counts{Images: 41, Sandboxes: 25, ReadySandboxes: 20, Containers: 92, Running: 40, Exited: 52}},
		{"demo large has 5,000 dead containers", DemoLarge(1), Counts{Images: 2001, Sandboxes: 1050, ReadySandboxes: 1000, Containers: 6000, Running: 1000, Exited: 5000}},
		{"scale has 100,000 dead containers", Scale(1), Counts{Images: 10001, Sandboxes: 5000, ReadySandboxes: 5000, Containers: 110000, Running: 10000, Exited: 100000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.o).Counts(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("deleted pods are removable and only they", func(t *testing.T) {
		n := New(small(1))
		got := n.RemovablePods()
		if len(got) != 1 {
			t.Fatalf("removable %v", got)
		}
		_, sb, _ := dump(t, n)
		for _, s := range sb {
			if s.Labels[labelPodUID] == got[0] && s.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
				t.Errorf("sandbox %s of a deleted pod is %s", s.Id, s.State)
			}
		}
	})
	t.Run("the sandbox image is not pinned unless asked", func(t *testing.T) {
		for _, pin := range []bool{false, true} {
			n := New(Options{PinSandboxImage: pin})
			im, _, _ := dump(t, n)
			if len(im) != 1 || im[0].RepoTags[0] != DefaultSandboxImage || im[0].Pinned != pin {
				t.Errorf("pin %v: %v", pin, im)
			}
		}
	})
	t.Run("capacity is sized to the initial usage", func(t *testing.T) {
		o := Demo(1)
		fs := New(o).FsStats()
		if u := 100 - fs.AvailableBytes*100/fs.CapacityBytes; u != int64(o.InitialUsagePercent) {
			t.Errorf("usage %d%%, want %d%%", u, o.InitialUsagePercent)
		}
	})
}

func TestWorkload(t *testing.T) {
	usage := func(n *Node) int64 {
		fs := n.FsStats()
		return 100 - fs.AvailableBytes*100/fs.CapacityBytes
	}
	presets := map[string]func(int64) Options{"demo": Demo, "demo large": DemoLarge}
	for _, name := range []string{"demo", "demo large"} {
		for seed := int64(1); seed <= 5; seed++ {
			t.Run(name+" fills the disk past 85% within 60 steps, seed "+strconv.FormatInt(seed, 10), func(t *testing.T) {
				n := New(presets[name](seed))
				for i := 1; i <= 60; i++ {
					n.Step(DefaultStart.Add(time.Duration(i) * time.Second))
					if usage(n) >= 85 {
						if i < 10 {
							t.Errorf("past 85%% after only %d steps", i)
						}
						return
					}
				}
				t.Errorf("usage %d%% after 60 steps", usage(n))
			})
		}
	}
	n := New(Demo(3))
	before := n.Counts()
	removableBefore := len(n.RemovablePods())
	for i := 1; i <= 60; i++ {
		n.Step(DefaultStart.Add(time.Duration(i) * time.Second))
	}
	after := n.Counts()
	t.Run("containers die and restart as new attempts", func(t *testing.T) {
		if after.Exited <= before.Exited {
			t.Errorf("exited %d → %d", before.Exited, after.Exited)
		}
		_, _, ks := dump(t, n)
		restarted := false
		for _, k := range ks {
			if k.State == runtimeapi.ContainerState_CONTAINER_RUNNING && k.CreatedAt > DefaultStart.UnixNano() && k.Metadata.Attempt > 0 {
				restarted = true
			}
		}
		if !restarted {
			t.Error("no running container restarted during the steps")
		}
	})
	t.Run("images are pulled and pods deleted", func(t *testing.T) {
		if after.Images <= before.Images {
			t.Errorf("images %d → %d", before.Images, after.Images)
		}
		if len(n.RemovablePods()) <= removableBefore {
			t.Errorf("removable pods %d → %d", removableBefore, len(n.RemovablePods()))
		}
	})
	t.Run("the clock follows the steps", func(t *testing.T) {
		if got := n.Now(); !got.Equal(DefaultStart.Add(time.Minute)) {
			t.Errorf("clock %v", got)
		}
		n.Step(DefaultStart)
		if got := n.Now(); !got.Equal(DefaultStart.Add(time.Minute)) {
			t.Errorf("clock went back to %v", got)
		}
	})
	t.Run("a removed pod is no longer removable", func(t *testing.T) {
		uid := n.RemovablePods()[0]
		rt := &runtimeService{n: n}
		_, sb, _ := dump(t, n)
		for _, s := range sb {
			if s.Labels[labelPodUID] == uid {
				if _, err := rt.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if slices.Contains(n.RemovablePods(), uid) {
			t.Errorf("pod %s still removable", uid)
		}
	})
}

func TestRuntimeSemantics(t *testing.T) {
	n := New(small(2))
	c, _ := start(t, n)
	ctx := context.Background()
	ks, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ks.Containers) != 6 {
		t.Fatalf("%d running containers, want 6", len(ks.Containers))
	}
	running := ks.Containers[0]
	missing := strings.Repeat("e", 64)

	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"removing a running container fails", func() error {
			_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: running.Id})
			return err
		}, codes.FailedPrecondition},
		{"removing a sandbox with a running container fails", func() error {
			_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: running.PodSandboxId})
			return err
		}, codes.FailedPrecondition},
		{"removing a missing container succeeds", func() error {
			_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: missing})
			return err
		}, codes.OK},
		{"removing a missing sandbox succeeds", func() error {
			_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: missing})
			return err
		}, codes.OK},
		{"removing a missing image succeeds", func() error {
			_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "sha256:" + missing}})
			return err
		}, codes.OK},
		{"the status of a missing container is NotFound", func() error {
			_, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: missing})
			return err
		}, codes.NotFound},
		{"the status of a missing sandbox is NotFound", func() error {
			_, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: missing})
			return err
		}, codes.NotFound},
		{"stopping a missing container is NotFound", func() error {
			_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: missing})
			return err
		}, codes.NotFound},
		{"an image in use by a container can be removed, as in containerd", func() error {
			_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: running.ImageRef}})
			return err
		}, codes.OK},
		{"a container of a missing image is not created", func() error {
			_, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: running.PodSandboxId, Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, Image: &runtimeapi.ImageSpec{Image: "nope:1"}}})
			return err
		}, codes.NotFound},
		{"an unimplemented method says so", func() error {
			_, err := c.rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: running.Id})
			return err
		}, codes.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Code(tt.call()); got != tt.want {
				t.Errorf("code %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("a missing image has an empty status, as in containerd", func(t *testing.T) {
		resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "sha256:" + missing}})
		if err != nil || resp.Image != nil {
			t.Errorf("%v, %v", resp, err)
		}
	})
	t.Run("stopping a sandbox stops its containers, then it can be removed with them", func(t *testing.T) {
		sb := running.PodSandboxId
		if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
			t.Fatal(err)
		}
		st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: running.Id})
		if err != nil || st.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.Status.FinishedAt == 0 {
			t.Fatalf("container after sandbox stop: %v, %v", st, err)
		}
		if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
			t.Fatal(err)
		}
		left, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb}})
		if err != nil || len(left.Containers) != 0 {
			t.Errorf("containers left: %v, %v", left, err)
		}
	})
	t.Run("filters select by state, sandbox and label", func(t *testing.T) {
		all, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		k := all.Containers[len(all.Containers)-1]
		byLabel, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{labelPodUID: k.Labels[labelPodUID], labelContainerName: k.Metadata.Name},
		}})
		if err != nil || len(byLabel.Containers) != 3 {
			t.Errorf("by label: %d containers, %v; want the 3 attempts", len(byLabel.GetContainers()), err)
		}
		byID, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: k.Id[:12]}})
		if err != nil || len(byID.Containers) != 1 || byID.Containers[0].Id != k.Id {
			t.Errorf("by ID prefix: %v, %v", byID, err)
		}
		ready, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		}})
		if err != nil || len(ready.Items) != 2 {
			t.Errorf("ready sandboxes: %d, %v", len(ready.GetItems()), err)
		}
	})
}

func TestPodLifecycleThroughCRI(t *testing.T) {
	n := New(Options{Seed: 1})
	c, _ := start(t, n)
	ctx := context.Background()
	pulled, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.36"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("pulling the same reference again gives the same image", func(t *testing.T) {
		again, err := c.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.36"}})
		if err != nil || again.ImageRef != pulled.ImageRef {
			t.Errorf("%v, %v", again, err)
		}
	})
	sb, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "uid-1", Namespace: "default"},
		LogDirectory: "/var/log/pods/default_p_uid-1",
		Labels:       map[string]string{labelPodUID: "uid-1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "box"},
		Image:    &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.36"},
		LogPath:  "box/0.log",
	}})
	if err != nil {
		t.Fatal(err)
	}
	state := func() *runtimeapi.ContainerStatus {
		st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ct.ContainerId})
		if err != nil {
			t.Fatal(err)
		}
		return st.Status
	}
	t.Run("a created container runs its image and logs in its sandbox's directory", func(t *testing.T) {
		st := state()
		if st.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.ImageRef != pulled.ImageRef ||
			st.LogPath != "/var/log/pods/default_p_uid-1/box/0.log" || st.Labels[labelPodUID] != "uid-1" {
			t.Errorf("status %v", st)
		}
	})
	t.Run("start, then stop", func(t *testing.T) {
		if _, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ct.ContainerId}); err != nil {
			t.Fatal(err)
		}
		if st := state(); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("after start %v", st.State)
		}
		if _, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ct.ContainerId, Timeout: 10}); err != nil {
			t.Fatal(err)
		}
		if st := state(); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" {
			t.Errorf("after stop %v", st)
		}
	})
	t.Run("the sandbox's verbose status names its image and log directory", func(t *testing.T) {
		st, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.PodSandboxId, Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		info := st.Info["info"]
		if !strings.Contains(info, `"image":"`+DefaultSandboxImage+`"`) || !strings.Contains(info, `"log_directory":"/var/log/pods/default_p_uid-1"`) {
			t.Errorf("info %s", info)
		}
	})
	t.Run("the runtime's verbose status names the sandbox image and the filesystem", func(t *testing.T) {
		st, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.Info["config"], `"sandboxImage":"`+DefaultSandboxImage+`"`) || !strings.Contains(st.Info[ImageFsInfoKey], `"capacityBytes":`) {
			t.Errorf("info %v", st.Info)
		}
	})
	t.Run("a pull that does not fit fails", func(t *testing.T) {
		tiny := New(Options{CapacityBytes: 1 << 20, Workload: Workload{PullMinBytes: 2 << 20, PullMaxBytes: 3 << 20}})
		_, err := (&imageService{n: tiny}).PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "big:1"}})
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("error %v", err)
		}
	})
}

func TestRemovalFreesSpace(t *testing.T) {
	n := New(small(3))
	c, _ := start(t, n)
	ctx := context.Background()
	list, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	before := n.FsStats()
	fsBefore, err := c.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	victim := list.Images[len(list.Images)-1]
	if _, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: victim.RepoDigests[0]}}); err != nil {
		t.Fatal(err)
	}
	after := n.FsStats()
	fsAfter, err := c.img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d := after.AvailableBytes - before.AvailableBytes; d != int64(victim.Size) {
		t.Errorf("available grew by %d, want %d", d, victim.Size)
	}
	if d := fsBefore.ImageFilesystems[0].UsedBytes.Value - fsAfter.ImageFilesystems[0].UsedBytes.Value; d != victim.Size {
		t.Errorf("ImageFsInfo used fell by %d, want %d", d, victim.Size)
	}
	st, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: victim.Id}})
	if err != nil || st.Image != nil {
		t.Errorf("removed by digest, the image is still there by ID: %v %v", st, err)
	}
}

func TestFaultsAndCalls(t *testing.T) {
	n := New(small(4))
	c, _ := start(t, n)
	ctx := context.Background()
	list, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := list.Images[1].Id, list.Images[2].Id
	remove := func(id string) error {
		_, err := c.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
		return err
	}
	n.InjectFault(Fault{Method: "RemoveImage", ID: a, Err: codes.Internal, Times: 2})
	t.Run("a fault hits only its object, the times asked", func(t *testing.T) {
		got := []codes.Code{status.Code(remove(b)), status.Code(remove(a)), status.Code(remove(a)), status.Code(remove(a))}
		if want := []codes.Code{codes.OK, codes.Internal, codes.Internal, codes.OK}; !slices.Equal(got, want) {
			t.Errorf("codes %v, want %v", got, want)
		}
	})
	t.Run("a fault without an ID or count hits every call of its method", func(t *testing.T) {
		n.InjectFault(Fault{Method: "/runtime.v1.RuntimeService/Version"})
		for range 3 {
			if _, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{}); status.Code(err) != codes.Unknown {
				t.Fatalf("error %v", err)
			}
		}
		n.ClearFaults()
		if _, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
			t.Errorf("after ClearFaults: %v", err)
		}
	})
	t.Run("latency beyond the deadline fails the call", func(t *testing.T) {
		n.SetLatency(time.Hour)
		defer n.SetLatency(0)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := c.rt.Version(cctx, &runtimeapi.VersionRequest{}); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("error %v", err)
		}
	})
	t.Run("every call is recorded, faulted ones too", func(t *testing.T) {
		calls := n.Calls()
		removes := 0
		for _, m := range calls {
			if m == "/runtime.v1.ImageService/RemoveImage" {
				removes++
			}
		}
		if removes != 4 || calls[0] != "/runtime.v1.ImageService/ListImages" {
			t.Errorf("calls %v", calls)
		}
		if got := n.MutatingCalls(); len(got) != 4 {
			t.Errorf("mutating %v", got)
		}
		n.ResetCalls()
		if len(n.Calls()) != 0 {
			t.Error("ResetCalls kept calls")
		}
	})
	t.Run("mutating latency delays removals and no read", func(t *testing.T) {
		n.SetMutatingLatency(time.Hour)
		defer n.SetMutatingLatency(0)
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := c.rt.Version(cctx, &runtimeapi.VersionRequest{}); err != nil {
			t.Errorf("a read waited: %v", err)
		}
		short, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel2()
		if _, err := c.rt.StopContainer(short, &runtimeapi.StopContainerRequest{ContainerId: "none"}); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("a mutating call was not delayed: %v", err)
		}
	})
}

func TestIsMutating(t *testing.T) {
	tests := []struct {
		method string
		want   bool
	}{
		{"/runtime.v1.ImageService/RemoveImage", true},
		{"/runtime.v1.ImageService/PullImage", true},
		{"/runtime.v1.RuntimeService/StopContainer", true},
		{"/runtime.v1.RuntimeService/RemoveContainer", true},
		{"/runtime.v1.RuntimeService/StopPodSandbox", true},
		{"/runtime.v1.RuntimeService/RemovePodSandbox", true},
		{"/runtime.v1.RuntimeService/RunPodSandbox", true},
		{"/runtime.v1.RuntimeService/CreateContainer", true},
		{"/runtime.v1.RuntimeService/StartContainer", true},
		{"/runtime.v1.RuntimeService/UpdateContainerResources", true},
		{"/runtime.v1.RuntimeService/ExecSync", true},
		{"/runtime.v1.RuntimeService/SomeFutureMethod", true},
		{"RemoveImage", true},
		{"/runtime.v1.RuntimeService/Version", false},
		{"/runtime.v1.RuntimeService/Status", false},
		{"/runtime.v1.RuntimeService/ListContainers", false},
		{"/runtime.v1.RuntimeService/ContainerStatus", false},
		{"/runtime.v1.RuntimeService/ListPodSandbox", false},
		{"/runtime.v1.RuntimeService/PodSandboxStatus", false},
		{"/runtime.v1.ImageService/ListImages", false},
		{"/runtime.v1.ImageService/ImageStatus", false},
		{"/runtime.v1.ImageService/ImageFsInfo", false},
		{"ListImages", false},
		{"/containerd.services.containers.v1.Containers/List", false},
		{"/containerd.services.containers.v1.Containers/Delete", true},
		{"List", true},
	}
	for _, tt := range tests {
		name := "is read-only"
		if tt.want {
			name = "mutates"
		}
		t.Run(tt.method+" "+name, func(t *testing.T) {
			if got := IsMutating(tt.method); got != tt.want {
				t.Errorf("IsMutating = %v", got)
			}
		})
	}
}

func TestListen(t *testing.T) {
	dir := socketDir(t)
	t.Run("the socket is 0600", func(t *testing.T) {
		p := filepath.Join(dir, "a.sock")
		l, err := Listen("unix://" + p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", fi.Mode().Perm())
		}
	})
	t.Run("a stale socket is replaced", func(t *testing.T) {
		p := filepath.Join(dir, "stale.sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		l2, err := Listen(p)
		if err != nil {
			t.Fatal(err)
		}
		l2.Close()
	})
	t.Run("a live socket is not taken over", func(t *testing.T) {
		p := filepath.Join(dir, "live.sock")
		l, err := Listen(p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		if l2, err := Listen(p); err == nil {
			l2.Close()
			t.Error("listened on a live socket")
		}
	})
	t.Run("a file that is not a socket is left alone", func(t *testing.T) {
		p := filepath.Join(dir, "file")
		if err := os.WriteFile(p, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Listen(p); err == nil {
			t.Error("listened over a regular file")
		}
		if b, _ := os.ReadFile(p); string(b) != "keep" {
			t.Error("the file was touched")
		}
	})
	t.Run("a tcp endpoint is refused", func(t *testing.T) {
		if _, err := Listen("tcp://127.0.0.1:0"); err == nil {
			t.Error("listened on tcp")
		}
	})
}

func TestDownAndUp(t *testing.T) {
	n := New(small(5))
	c, ep := start(t, n)
	ctx := context.Background()
	version := func() error { _, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{}); return err }
	if err := version(); err != nil {
		t.Fatal(err)
	}
	n.Down()
	t.Run("down, the socket is gone and calls are unavailable", func(t *testing.T) {
		if _, err := os.Stat(strings.TrimPrefix(ep, "unix://")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket: %v", err)
		}
		if code := status.Code(version()); code != codes.Unavailable {
			t.Errorf("code %v", code)
		}
	})
	if err := n.Up(); err != nil {
		t.Fatal(err)
	}
	t.Run("up again, calls go through on the same socket", func(t *testing.T) {
		critest.Eventually(t, version)
	})
	t.Run("down and up in quick succession keep serving", func(t *testing.T) {
		for range 5 {
			n.Down()
			if err := n.Up(); err != nil {
				t.Fatal(err)
			}
		}
		n.Down()
		n.Down()
		if err := n.Up(); err != nil {
			t.Fatal(err)
		}
		critest.Eventually(t, version)
	})
	t.Run("dropped connections are reopened", func(t *testing.T) {
		n.DropConnections()
		critest.Eventually(t, version)
	})
	t.Run("a stopped node does not serve again", func(t *testing.T) {
		n.Stop()
		l, err := Listen(filepath.Join(socketDir(t), "x.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Serve(l); !errors.Is(err, ErrStopped) {
			t.Errorf("serve after stop: %v", err)
		}
	})
}

func TestStart(t *testing.T) {
	ep := "unix://" + filepath.Join(socketDir(t), "demo.sock")
	n, err := Start(Demo(1), ep)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	v, err := runtimeapi.NewRuntimeServiceClient(conn).Version(context.Background(), &runtimeapi.VersionRequest{})
	if err != nil || v.RuntimeName != DefaultRuntimeName {
		t.Fatalf("version %v, %v", v, err)
	}
	n.Stop()
	if err := n.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	if _, err := os.Stat(strings.TrimPrefix(ep, "unix://")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

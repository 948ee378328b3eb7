package cri

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/critest"
	"github.com/nodegc/nodegc/internal/simnode"
)

func small(seed int64) simnode.Options {
	return simnode.Options{Seed: seed, Images: 12, Pods: 4, ContainersPerPod: 2, DeadPerContainer: 2, DeletedPods: 1, StaleSandboxes: 1}
}

func TestListThroughTheAdapter(t *testing.T) {
	n, ep := serve(t, small(1))
	c := dial(t, ep, Options{})
	ctx := context.Background()

	images, err := c.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	containers, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sandboxes, err := c.ListSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := n.Counts()

	t.Run("every object is listed", func(t *testing.T) {
		if len(images) != counts.Images || len(containers) != counts.Containers || len(sandboxes) != counts.Sandboxes {
			t.Errorf("listed %d images, %d containers, %d sandboxes; node has %+v", len(images), len(containers), len(sandboxes), counts)
		}
	})
	byID := make(map[string]engine.Image)
	for _, im := range images {
		byID[im.ID] = im
	}
	sbByID := make(map[string]engine.Sandbox)
	for _, s := range sandboxes {
		sbByID[s.ID] = s
	}
	t.Run("a container's ImageID is the ID of a listed image and ImageRef its spec", func(t *testing.T) {
		for _, k := range containers {
			im, ok := byID[k.ImageID]
			if !ok {
				t.Fatalf("container %s: ImageID %q is no listed image", k.ID, k.ImageID)
			}
			if !slices.Contains(im.RepoTags, k.ImageRef) && !slices.Contains(im.RepoDigests, k.ImageRef) {
				t.Errorf("container %s: ImageRef %q names neither a tag nor a digest of %s", k.ID, k.ImageRef, im.ID)
			}
		}
	})
	t.Run("a container belongs to its sandbox's pod", func(t *testing.T) {
		for _, k := range containers {
			s, ok := sbByID[k.PodSandboxID]
			if !ok {
				t.Fatalf("container %s: sandbox %q not listed", k.ID, k.PodSandboxID)
			}
			if k.PodUID == "" || k.PodUID != s.PodUID {
				t.Errorf("container %s: PodUID %q, its sandbox's %q", k.ID, k.PodUID, s.PodUID)
			}
			if k.Name == "" || k.CreatedAt.IsZero() || k.CreatedAt.Location() != time.UTC {
				t.Errorf("container %s: name %q createdAt %v", k.ID, k.Name, k.CreatedAt)
			}
		}
	})
	t.Run("sandboxes carry the pod and a state", func(t *testing.T) {
		states := map[engine.SandboxState]int{}
		for _, s := range sandboxes {
			if s.PodUID == "" || s.PodName == "" || s.PodNamespace == "" {
				t.Errorf("sandbox %s: pod %q/%q/%q", s.ID, s.PodNamespace, s.PodName, s.PodUID)
			}
			states[s.State]++
		}
		if states[engine.SandboxReady] != 4 || states[engine.SandboxNotReady] != 2 {
			t.Errorf("states %v, want 4 ready and 2 not ready", states)
		}
	})
	t.Run("without ExitDetails no container status is asked", func(t *testing.T) {
		for _, m := range n.Calls() {
			if strings.HasSuffix(m, "/ContainerStatus") {
				t.Errorf("unexpected call %s", m)
			}
		}
		for _, k := range containers {
			if k.FinishedAt != nil {
				t.Fatalf("container %s has FinishedAt without ExitDetails", k.ID)
			}
		}
	})
}

func TestConversions(t *testing.T) {
	tests := []struct {
		name string
		in   *runtimeapi.Container
		want engine.Container
	}{
		{
			name: "image_ref is the image ID when image_id is empty (containerd 1.6)",
			in: &runtimeapi.Container{Id: "c1", PodSandboxId: "s1", Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
				Image: &runtimeapi.ImageSpec{Image: "nginx:1"}, ImageRef: "sha256:aa", State: runtimeapi.ContainerState_CONTAINER_EXITED,
				CreatedAt: 1_000_000_000, Labels: map[string]string{labelPodUID: "u1"}},
			want: engine.Container{ID: "c1", PodSandboxID: "s1", PodUID: "u1", Name: "app", Attempt: 3, ImageID: "sha256:aa",
				ImageRef: "nginx:1", State: engine.ContainerExited, CreatedAt: time.Unix(1, 0).UTC()},
		},
		{
			name: "image_id wins over image_ref when the runtime sets it",
			in:   &runtimeapi.Container{Id: "c2", ImageId: "sha256:bb", ImageRef: "docker.io/x@sha256:cc", State: runtimeapi.ContainerState_CONTAINER_UNKNOWN},
			want: engine.Container{ID: "c2", ImageID: "sha256:bb", State: engine.ContainerUnknown, CreatedAt: time.Unix(0, 0).UTC()},
		},
		{
			name: "created and running states map to their names",
			in:   &runtimeapi.Container{Id: "c3", State: runtimeapi.ContainerState_CONTAINER_CREATED},
			want: engine.Container{ID: "c3", State: engine.ContainerCreated, CreatedAt: time.Unix(0, 0).UTC()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toContainer(tt.in)
			if !got.CreatedAt.Equal(tt.want.CreatedAt) {
				t.Errorf("createdAt %v, want %v", got.CreatedAt, tt.want.CreatedAt)
			}
			got.CreatedAt, tt.want.CreatedAt = time.Time{}, time.Time{}
			if !equalContainer(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}

	t.Run("sandbox labels win over metadata, which fills what labels lack", func(t *testing.T) {
		got := toSandbox(&runtimeapi.PodSandbox{
			Id:       "s",
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "meta-name", Uid: "meta-uid", Namespace: "meta-ns", Attempt: 2},
			Labels:   map[string]string{labelPodUID: "label-uid"},
			State:    runtimeapi.PodSandboxState_SANDBOX_READY,
		})
		if got.PodUID != "label-uid" || got.PodName != "meta-name" || got.PodNamespace != "meta-ns" || got.Attempt != 2 || got.State != engine.SandboxReady {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("a sandbox carries its pod's config source from the annotation the kubelet sets, never from a label", func(t *testing.T) {
		got := toSandbox(&runtimeapi.PodSandbox{
			Id:          "s",
			Metadata:    &runtimeapi.PodSandboxMetadata{Uid: "u"},
			Labels:      map[string]string{annotationConfigSource: "api"},
			Annotations: map[string]string{annotationConfigSource: "file"},
		})
		if got.ConfigSource != "file" || !got.Static() {
			t.Errorf("config source %q (static %v), want file (static)", got.ConfigSource, got.Static())
		}
		if got := toSandbox(&runtimeapi.PodSandbox{Id: "s", Labels: map[string]string{annotationConfigSource: "file"}}); got.ConfigSource != "" || got.Static() {
			t.Errorf("a label set the config source: %+v", got)
		}
	})
}

func equalContainer(a, b engine.Container) bool {
	return a.ID == b.ID && a.PodSandboxID == b.PodSandboxID && a.PodUID == b.PodUID && a.Name == b.Name &&
		a.Attempt == b.Attempt && a.ImageID == b.ImageID && a.ImageRef == b.ImageRef && a.State == b.State &&
		a.CreatedAt.Equal(b.CreatedAt) && a.ExitCode == b.ExitCode && a.LogPath == b.LogPath &&
		(a.FinishedAt == nil) == (b.FinishedAt == nil)
}

func TestNotFound(t *testing.T) {
	_, ep := serve(t, small(2))
	c := dial(t, ep, Options{})
	ctx := context.Background()
	missing := strings.Repeat("f", 64)
	tests := []struct {
		name string
		call func() error
	}{
		{"image status of a missing image (an empty response)", func() error { _, err := c.ImageStatus(ctx, "sha256:"+missing); return err }},
		{"container status of a missing container", func() error { _, err := c.ContainerStatus(ctx, missing); return err }},
		{"sandbox status of a missing sandbox", func() error { _, err := c.SandboxStatus(ctx, missing); return err }},
		{"stop of a missing container", func() error { return c.StopContainer(ctx, missing, time.Second) }},
		{"stop of a missing sandbox", func() error { return c.StopSandbox(ctx, missing) }},
	}
	for _, tt := range tests {
		t.Run(tt.name+" wraps ErrNotFound", func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("error %v does not wrap ErrNotFound", err)
			}
			if errors.Is(err, engine.ErrUnavailable) {
				t.Errorf("error %v wraps ErrUnavailable", err)
			}
		})
	}
	t.Run("removals of missing objects succeed, as the CRI asks", func(t *testing.T) {
		for _, err := range []error{c.RemoveImage(ctx, "sha256:"+missing), c.RemoveContainer(ctx, missing), c.RemoveSandbox(ctx, missing)} {
			if err != nil {
				t.Errorf("removal: %v", err)
			}
		}
	})
}

func TestStatusCalls(t *testing.T) {
	n, ep := serve(t, small(3))
	c := dial(t, ep, Options{})
	ctx := context.Background()
	containers, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var exited engine.Container
	for _, k := range containers {
		if k.State == engine.ContainerExited {
			exited = k
			break
		}
	}
	t.Run("container status has exit details and the sandbox", func(t *testing.T) {
		got, err := c.ContainerStatus(ctx, exited.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.FinishedAt == nil || got.ExitCode == 0 || !strings.HasPrefix(got.LogPath, simnode.DefaultPodLogsDir+"/") {
			t.Errorf("details missing: %+v", got)
		}
		if got.PodSandboxID != exited.PodSandboxID || got.ImageID != exited.ImageID || got.PodUID != exited.PodUID {
			t.Errorf("status %+v disagrees with list %+v", got, exited)
		}
	})
	t.Run("sandbox status has the log directory", func(t *testing.T) {
		got, err := c.SandboxStatus(ctx, exited.PodSandboxID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(got.LogDirectory, "_"+got.PodUID) || got.PodUID != exited.PodUID {
			t.Errorf("sandbox %+v", got)
		}
	})
	t.Run("image status finds an image by ID", func(t *testing.T) {
		got, err := c.ImageStatus(ctx, exited.ImageID)
		if err != nil || got.ID != exited.ImageID || got.SizeBytes <= 0 {
			t.Errorf("image %+v, %v", got, err)
		}
	})
	t.Run("none of it mutates", func(t *testing.T) {
		if m := n.MutatingCalls(); len(m) > 0 {
			t.Errorf("mutating calls %v", m)
		}
	})
}

func TestExitDetails(t *testing.T) {
	n, ep := serve(t, small(4))
	c := dial(t, ep, Options{ExitDetails: true, StatusConcurrency: 3})
	ctx := context.Background()
	statusCalls := func() int {
		k := 0
		for _, m := range n.Calls() {
			if strings.HasSuffix(m, "/ContainerStatus") {
				k++
			}
		}
		return k
	}
	first, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exited := 0
	for _, k := range first {
		switch k.State {
		case engine.ContainerExited:
			exited++
			if k.FinishedAt == nil || k.FinishedAt.Before(k.CreatedAt) || k.ExitCode == 0 || k.LogPath == "" {
				t.Errorf("exited container %s lacks details: %+v", k.ID, k)
			}
		case engine.ContainerRunning:
			if k.FinishedAt != nil {
				t.Errorf("running container %s has FinishedAt", k.ID)
			}
		}
	}
	t.Run("one status call per exited container", func(t *testing.T) {
		if got := statusCalls(); got != exited || exited == 0 {
			t.Errorf("%d status calls for %d exited containers", got, exited)
		}
	})
	t.Run("a second listing asks nothing more and gives the same details", func(t *testing.T) {
		second, err := c.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := statusCalls(); got != exited {
			t.Errorf("%d status calls after the second listing, want %d", got, exited)
		}
		if !slices.EqualFunc(first, second, equalContainer) {
			t.Error("second listing differs")
		}
	})
	t.Run("removed containers leave the cache, and a cache mostly emptied is built again at its size", func(t *testing.T) {
		var ids []string
		for _, k := range first {
			if k.State == engine.ContainerExited {
				ids = append(ids, k.ID)
			}
		}
		if len(ids) < 3 {
			t.Fatalf("%d exited containers; the fixture needs 3", len(ids))
		}
		before := reflect.ValueOf(c.exits).UnsafePointer()
		for _, id := range ids[1:] {
			if err := c.RemoveContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		calls := statusCalls()
		if _, err := c.ListContainers(ctx); err != nil {
			t.Fatal(err)
		}
		if len(c.exits) != 1 || statusCalls() != calls {
			t.Errorf("cache of %d entries after %d status calls; want the one left, asked nothing", len(c.exits), statusCalls()-calls)
		}
		if reflect.ValueOf(c.exits).UnsafePointer() == before {
			t.Error("the cache kept the map that held every exited container")
		}
	})
}

func TestReadOnly(t *testing.T) {
	n, ep := serve(t, small(5))
	c := dial(t, ep, Options{ExitDetails: true})
	r := c.ReadOnly()
	t.Run("the read-only view is no Remover", func(t *testing.T) {
		if _, ok := r.(engine.Remover); ok {
			t.Fatal("ReadOnly() satisfies engine.Remover")
		}
		if _, ok := r.(engine.Runtime); ok {
			t.Fatal("ReadOnly() satisfies engine.Runtime")
		}
	})
	t.Run("every reading method works and none mutates", func(t *testing.T) {
		ctx := context.Background()
		if _, err := r.Info(ctx); err != nil {
			t.Error(err)
		}
		images, err := r.ListImages(ctx)
		if err != nil || len(images) == 0 {
			t.Fatal(images, err)
		}
		if _, err := r.ImageStatus(ctx, images[0].ID); err != nil {
			t.Error(err)
		}
		ks, err := r.ListContainers(ctx)
		if err != nil || len(ks) == 0 {
			t.Fatal(ks, err)
		}
		if _, err := r.ContainerStatus(ctx, ks[0].ID); err != nil {
			t.Error(err)
		}
		ss, err := r.ListSandboxes(ctx)
		if err != nil || len(ss) == 0 {
			t.Fatal(ss, err)
		}
		if _, err := r.SandboxStatus(ctx, ss[0].ID); err != nil {
			t.Error(err)
		}
		if _, err := r.ImageFs(ctx); err != nil {
			t.Error(err)
		}
		if m := n.MutatingCalls(); len(m) > 0 {
			t.Errorf("mutating calls %v", m)
		}
		if len(n.Calls()) < 9 {
			t.Errorf("only %d calls recorded", len(n.Calls()))
		}
	})
}

func TestInfo(t *testing.T) {
	o := small(6)
	o.SandboxImage = "registry.k8s.io/pause:3.9"
	_, ep := serve(t, o)
	c := dial(t, ep, Options{})
	got, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != simnode.DefaultRuntimeName || got.Version != simnode.DefaultRuntimeVersion || got.Endpoint != ep {
		t.Errorf("info %+v", got)
	}
	if !slices.Equal(got.SandboxImages, []string{"registry.k8s.io/pause:3.9"}) {
		t.Errorf("sandbox images %v", got.SandboxImages)
	}
}

func TestSandboxImagesFromConfig(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"containerd 1.x names sandboxImage", `{"sandboxImage":"registry.k8s.io/pause:3.6","snapshotter":"overlayfs"}`, []string{"registry.k8s.io/pause:3.6"}},
		{"containerd 2.x pins it under pinnedImages.sandbox", `{"pinnedImages":{"sandbox":"registry.k8s.io/pause:3.10"}}`, []string{"registry.k8s.io/pause:3.10"}},
		{"a pause_image key is read", `{"pause_image":"registry.k8s.io/pause:3.9"}`, []string{"registry.k8s.io/pause:3.9"}},
		{"a config without it gives nothing", `{"snapshotter":"overlayfs"}`, nil},
		{"malformed JSON gives nothing", `{`, nil},
		{"no config gives nothing", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sandboxImagesFromConfig(tt.config); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestImageFsAndRemoval(t *testing.T) {
	n, ep := serve(t, small(7))
	c := dial(t, ep, Options{})
	ctx := context.Background()
	fsBefore := n.ImageFs()
	n.ResetCalls()
	before, err := c.ImageFs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the image filesystem's mountpoint and usage are reported, with one ImageFsInfo call", func(t *testing.T) {
		if fsBefore.UsedBytes < before.UsedBytes {
			t.Errorf("filesystem %+v, image bytes %d", fsBefore, before.UsedBytes)
		}
		if before.Mountpoint != simnode.DefaultMountpoint || before.InodesUsed <= 0 {
			t.Errorf("usage %+v", before)
		}
		if calls := n.Calls(); !slices.Equal(calls, []string{"/runtime.v1.ImageService/ImageFsInfo"}) {
			t.Errorf("calls %v, want ImageFsInfo alone", calls)
		}
	})
	images, err := c.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := images[len(images)-1]
	if err := c.RemoveImage(ctx, victim.ID); err != nil {
		t.Fatal(err)
	}
	after, err := c.ImageFs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("removing an image frees its size at once", func(t *testing.T) {
		if d := before.UsedBytes - after.UsedBytes; d != victim.SizeBytes {
			t.Errorf("image bytes fell by %d, want %d", d, victim.SizeBytes)
		}
		if d := n.ImageFs().AvailableBytes - fsBefore.AvailableBytes; d != victim.SizeBytes {
			t.Errorf("available grew by %d, want %d", d, victim.SizeBytes)
		}
		if _, err := c.ImageStatus(ctx, victim.ID); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("image status after removal: %v", err)
		}
	})
	t.Run("the removal is recorded as mutating", func(t *testing.T) {
		if m := n.MutatingCalls(); !slices.Equal(m, []string{"/runtime.v1.ImageService/RemoveImage"}) {
			t.Errorf("mutating calls %v", m)
		}
	})
}

func TestContainerAndSandboxRemoval(t *testing.T) {
	_, ep := serve(t, small(8))
	c := dial(t, ep, Options{})
	ctx := context.Background()
	ks, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var running engine.Container
	for _, k := range ks {
		if k.State == engine.ContainerRunning {
			running = k
			break
		}
	}
	t.Run("a running container is not removed", func(t *testing.T) {
		err := c.RemoveContainer(ctx, running.ID)
		if status.Code(err) != codes.FailedPrecondition || errors.Is(err, engine.ErrNotFound) {
			t.Errorf("remove running: %v", err)
		}
	})
	t.Run("a stopped container is removed", func(t *testing.T) {
		if err := c.StopContainer(ctx, running.ID, 0); err != nil {
			t.Fatal(err)
		}
		got, err := c.ContainerStatus(ctx, running.ID)
		if err != nil || got.State != engine.ContainerExited {
			t.Fatalf("after stop: %+v, %v", got, err)
		}
		if err := c.RemoveContainer(ctx, running.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContainerStatus(ctx, running.ID); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("status after removal: %v", err)
		}
	})
	t.Run("a stopped sandbox is removed with its containers", func(t *testing.T) {
		sb := running.PodSandboxID
		if err := c.StopSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		ks, err := c.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if k.PodSandboxID == sb {
				t.Errorf("container %s of removed sandbox remains", k.ID)
			}
		}
	})
}

func TestUnreachable(t *testing.T) {
	dir := socketDir(t)
	refused := filepath.Join(dir, "refused.sock")
	l, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // leaves a socket file nobody listens on
	notSocket := filepath.Join(dir, "file")
	if err := os.WriteFile(notSocket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		endpoint string
		want     error
	}{
		{"a missing socket is unavailable", "unix://" + filepath.Join(dir, "missing.sock"), engine.ErrUnavailable},
		{"a bare missing path is unavailable", filepath.Join(dir, "missing.sock"), engine.ErrUnavailable},
		{"a socket nobody serves is unavailable", "unix://" + refused, engine.ErrUnavailable},
		{"a file that is no socket is unavailable", notSocket, engine.ErrUnavailable},
		{"a tcp endpoint is invalid", "tcp://127.0.0.1:1234", ErrInvalidEndpoint},
		{"a relative path is invalid", "run/x.sock", ErrInvalidEndpoint},
		{"an empty unix path is invalid", "unix://", ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := Dial(ctx, tt.endpoint, Options{})
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("error %q does not wrap %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestDialFailsFast(t *testing.T) {
	tests := []struct {
		name  string
		fault simnode.Fault
		code  codes.Code
	}{
		{"a socket that is no CRI runtime is unavailable", simnode.Fault{Method: "Version", Err: codes.Unimplemented}, codes.Unimplemented},
		{"a runtime whose Version fails is unavailable", simnode.Fault{Method: "Version", Err: codes.Internal}, codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ep := serve(t, simnode.Options{})
			n.InjectFault(tt.fault)
			c, err := Dial(context.Background(), ep, Options{})
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if !errors.Is(err, engine.ErrUnavailable) || status.Code(err) != tt.code {
				t.Errorf("error %v (code %v)", err, status.Code(err))
			}
		})
	}
	t.Run("a runtime slower than the read timeout is unavailable", func(t *testing.T) {
		n, ep := serve(t, simnode.Options{})
		n.SetLatency(time.Minute)
		c, err := Dial(context.Background(), ep, Options{ReadTimeout: 50 * time.Millisecond})
		if err == nil {
			c.Close()
			t.Fatal("dial succeeded")
		}
		if !errors.Is(err, engine.ErrUnavailable) || status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("error %v", err)
		}
	})
}

func TestPermissionDenied(t *testing.T) {
	ep := "unix:///run/containerd/containerd.sock"
	tests := []struct {
		name string
		err  error
	}{
		{"EACCES on connect", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}},
		{"EPERM on connect", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EPERM)}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" says root is needed", func(t *testing.T) {
			err := dialError(ep, tt.err)
			if !errors.Is(err, ErrPermissionDenied) || !errors.Is(err, engine.ErrUnavailable) {
				t.Errorf("%v does not wrap both ErrPermissionDenied and ErrUnavailable", err)
			}
			want := "permission denied: talking to unix:///run/containerd/containerd.sock needs root, as crictl does"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q, want prefix %q", err, want)
			}
		})
	}
	t.Run("connection refused is not a permission problem", func(t *testing.T) {
		err := dialError(ep, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
		if errors.Is(err, ErrPermissionDenied) || !errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("%v", err)
		}
	})
}

// eventually retries f until it succeeds or ten seconds pass: reconnecting
func TestOutageAndReconnect(t *testing.T) {
	n, ep := serve(t, small(9))
	c := dial(t, ep, Options{ReadTimeout: 5 * time.Second})
	ctx := context.Background()
	if _, err := c.ListImages(ctx); err != nil {
		t.Fatal(err)
	}
	n.Down()
	t.Run("a runtime that went down is unavailable", func(t *testing.T) {
		_, err := c.ListImages(ctx)
		if !errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("error %v does not wrap ErrUnavailable", err)
		}
	})
	if err := n.Up(); err != nil {
		t.Fatal(err)
	}
	t.Run("the client reconnects when it is back", func(t *testing.T) {
		critest.Eventually(t, func() error { _, err := c.ListImages(ctx); return err })
	})
}

func TestDroppedConnection(t *testing.T) {
	n, ep := serve(t, small(10))
	c := dial(t, ep, Options{ReadTimeout: 30 * time.Second})
	ctx := context.Background()
	n.SetLatency(time.Minute)
	errc := make(chan error, 1)
	go func() { _, err := c.ListContainers(ctx); errc <- err }()
	critest.Eventually(t, func() error {
		for _, m := range n.Calls() {
			if strings.HasSuffix(m, "/ListContainers") {
				return nil
			}
		}
		return errors.New("the call has not arrived")
	})
	n.DropConnections()
	t.Run("a call in flight on a dropped connection is unavailable", func(t *testing.T) {
		if err := <-errc; !errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("error %v does not wrap ErrUnavailable", err)
		}
	})
	n.SetLatency(0)
	t.Run("the next calls go through a new connection", func(t *testing.T) {
		critest.Eventually(t, func() error { _, err := c.ListContainers(ctx); return err })
	})
}

func TestInjectedRemovalFault(t *testing.T) {
	n, ep := serve(t, small(11))
	c := dial(t, ep, Options{})
	ctx := context.Background()
	images, err := c.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, b := images[len(images)-1], images[len(images)-2]
	n.InjectFault(simnode.Fault{Method: "RemoveImage", ID: a.ID, Err: codes.Internal, Times: 1})
	t.Run("the chosen removal fails with the injected error", func(t *testing.T) {
		err := c.RemoveImage(ctx, a.ID)
		if status.Code(err) != codes.Internal || errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("another image is removed", func(t *testing.T) {
		if err := c.RemoveImage(ctx, b.ID); err != nil {
			t.Error(err)
		}
	})
	t.Run("the fault fires only the times asked", func(t *testing.T) {
		if err := c.RemoveImage(ctx, a.ID); err != nil {
			t.Error(err)
		}
	})
	t.Run("an injected NotFound wraps ErrNotFound", func(t *testing.T) {
		n.InjectFault(simnode.Fault{Method: "RemoveContainer", Err: codes.NotFound})
		if err := c.RemoveContainer(ctx, "whatever"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("a call slower than its timeout fails", func(t *testing.T) {
		slow := dial(t, ep, Options{ReadTimeout: 50 * time.Millisecond})
		n.SetLatency(time.Minute)
		defer n.SetLatency(0)
		if _, err := slow.ListImages(ctx); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("error %v", err)
		}
	})
}

func TestDiscover(t *testing.T) {
	_, live := serve(t, small(12))
	missing := "unix://" + filepath.Join(socketDir(t), "none.sock")
	ctx := context.Background()
	tests := []struct {
		name               string
		flag, env, kubelet string
		candidates         []string
		wantEndpoint       string
		wantSource         Source
		wantErr            error
	}{
		{"the flag wins", "/a.sock", "/b.sock", "/c.sock", []string{live}, "unix:///a.sock", SourceFlag, nil},
		{"then the environment", "", "unix:///b.sock", "/c.sock", []string{live}, "unix:///b.sock", SourceEnv, nil},
		{"then the kubelet config", "", "", "/c.sock", []string{live}, "unix:///c.sock", SourceKubeletConfig, nil},
		{"then the first candidate that answers", "", "", "", []string{missing, live}, live, SourceProbe, nil},
		{"no candidate answering is unavailable", "", "", "", []string{missing}, "", SourceProbe, engine.ErrUnavailable},
		{"a bad flag is invalid input", "tcp://x:1", "", "", []string{live}, "", SourceFlag, ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, src, err := DiscoverAmong(ctx, tt.flag, tt.env, tt.kubelet, tt.candidates)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if ep != tt.wantEndpoint || src != tt.wantSource {
				t.Errorf("got %q from %q, want %q from %q", ep, src, tt.wantEndpoint, tt.wantSource)
			}
		})
	}
	t.Run("the default candidates are the well-known sockets in order", func(t *testing.T) {
		want := []string{"unix:///run/containerd/containerd.sock", "unix:///run/crio/crio.sock",
			"unix:///var/run/cri-dockerd.sock", "unix:///run/k3s/containerd/containerd.sock"}
		if got := DefaultEndpoints(); !slices.Equal(got, want) {
			t.Errorf("got %v", got)
		}
	})
}

func TestHundredThousandContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("large node")
	}
	n, ep := serve(t, simnode.Scale(1))
	// This pins the message size, not the speed: under -race on a loaded
	// 2-core CI machine the listing took longer than the default 30 s read
	// timeout ("context deadline exceeded"), so the reads here have ten
	// minutes.
	const patient = 10 * time.Minute
	c := dial(t, ep, Options{ReadTimeout: patient})
	ks, err := c.ListContainers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	exited := 0
	for _, k := range ks {
		if k.State == engine.ContainerExited {
			exited++
		}
	}
	if want := n.Counts(); len(ks) != want.Containers || exited != 100_000 {
		t.Errorf("listed %d containers, %d exited; node %+v", len(ks), exited, want)
	}
	t.Run("the usual 16 MiB receive limit does not fit them", func(t *testing.T) {
		c16 := dial(t, ep, Options{MaxRecvMsgSize: 16 << 20, ReadTimeout: patient})
		if _, err := c16.ListContainers(context.Background()); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("with 16 MiB: %v", err)
		}
	})
}

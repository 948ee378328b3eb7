package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

// Labels the kubelet sets on sandboxes and containers.
const (
	labelPodUID       = "io.kubernetes.pod.uid"
	labelPodName      = "io.kubernetes.pod.name"
	labelPodNamespace = "io.kubernetes.pod.namespace"
)

// annotationConfigSource is the annotation the kubelet sets on every pod
// it runs, and so on its sandbox, naming where the pod came from
// (kubetypes.ConfigSourceAnnotationKey).
const annotationConfigSource = "kubernetes.io/config.source"

// ReadOnly returns a view of the client with only engine.Reader's
// methods: a type assertion to engine.Remover on it fails, so code given
// it cannot delete anything.
func (c *Client) ReadOnly() engine.Reader { return readOnly{c: c} }

type readOnly struct{ c *Client }

func (r readOnly) Info(ctx context.Context) (engine.RuntimeInfo, error) { return r.c.Info(ctx) }
func (r readOnly) InfoFor(ctx context.Context, sandboxes []engine.Sandbox) (engine.RuntimeInfo, error) {
	return r.c.InfoFor(ctx, sandboxes)
}
func (r readOnly) ListImages(ctx context.Context) ([]engine.Image, error) {
	return r.c.ListImages(ctx)
}
func (r readOnly) ImageStatus(ctx context.Context, id string) (engine.Image, error) {
	return r.c.ImageStatus(ctx, id)
}
func (r readOnly) ListContainers(ctx context.Context) ([]engine.Container, error) {
	return r.c.ListContainers(ctx)
}
func (r readOnly) ContainerStatus(ctx context.Context, id string) (engine.Container, error) {
	return r.c.ContainerStatus(ctx, id)
}
func (r readOnly) ListSandboxes(ctx context.Context) ([]engine.Sandbox, error) {
	return r.c.ListSandboxes(ctx)
}
func (r readOnly) SandboxStatus(ctx context.Context, id string) (engine.Sandbox, error) {
	return r.c.SandboxStatus(ctx, id)
}
func (r readOnly) ImageFs(ctx context.Context) (engine.ImageFsUsage, error) {
	return r.c.ImageFs(ctx)
}

// nsTime converts CRI nanoseconds to a UTC time.
func nsTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

func toImage(im *runtimeapi.Image) engine.Image {
	return engine.Image{
		ID:          im.GetId(),
		RepoTags:    im.GetRepoTags(),
		RepoDigests: im.GetRepoDigests(),
		SizeBytes:   int64(im.GetSize()),
		Pinned:      im.GetPinned(),
	}
}

// containerState maps a CRI container state; one the API does not define
// keeps its number and counts as active (never stopped or removed).
func containerState(s runtimeapi.ContainerState) engine.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return engine.ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return engine.ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return engine.ContainerExited
	case runtimeapi.ContainerState_CONTAINER_UNKNOWN:
		return engine.ContainerUnknown
	}
	return engine.ContainerStateOther(int32(s))
}

// sandboxState maps a CRI sandbox state; one the API does not define keeps
// its number and counts as active (never NOTREADY, so never removed).
func sandboxState(s runtimeapi.PodSandboxState) engine.SandboxState {
	switch s {
	case runtimeapi.PodSandboxState_SANDBOX_READY:
		return engine.SandboxReady
	case runtimeapi.PodSandboxState_SANDBOX_NOTREADY:
		return engine.SandboxNotReady
	}
	return engine.SandboxStateOther(int32(s))
}

// imageID is the ID of the image a container runs, as the kubelet takes
// it: the CRI image_id when the runtime sets it (CRI v1.31 and later),
// else image_ref, which containerd fills with the image ID.
func imageID(id, ref string) string {
	if id != "" {
		return id
	}
	return ref
}

func toContainer(c *runtimeapi.Container) engine.Container {
	return engine.Container{
		ID:           c.GetId(),
		PodSandboxID: c.GetPodSandboxId(),
		PodUID:       c.GetLabels()[labelPodUID],
		Name:         c.GetMetadata().GetName(),
		Attempt:      c.GetMetadata().GetAttempt(),
		ImageID:      imageID(c.GetImageId(), c.GetImageRef()),
		ImageRef:     c.GetImage().GetImage(),
		State:        containerState(c.GetState()),
		CreatedAt:    nsTime(c.GetCreatedAt()),
	}
}

// exitDetails are what ContainerStatus adds to a listed container.
type exitDetails struct {
	finishedAt *time.Time
	exitCode   int32
	logPath    string
}

func detailsOf(s *runtimeapi.ContainerStatus) exitDetails {
	d := exitDetails{exitCode: s.GetExitCode(), logPath: s.GetLogPath()}
	if s.GetFinishedAt() > 0 {
		t := nsTime(s.GetFinishedAt())
		d.finishedAt = &t
	}
	return d
}

func (d exitDetails) apply(c *engine.Container) {
	c.FinishedAt, c.ExitCode, c.LogPath = d.finishedAt, d.exitCode, d.logPath
}

func toSandbox(s *runtimeapi.PodSandbox) engine.Sandbox {
	sb := sandboxFrom(s.GetId(), s.GetMetadata(), s.GetLabels(), s.GetState(), s.GetCreatedAt())
	sb.ConfigSource = s.GetAnnotations()[annotationConfigSource]
	return sb
}

// sandboxFrom prefers the kubelet's labels for the pod and falls back on
// the sandbox metadata, which a sandbox made by another client has alone.
func sandboxFrom(id string, md *runtimeapi.PodSandboxMetadata, labels map[string]string, st runtimeapi.PodSandboxState, created int64) engine.Sandbox {
	or := func(label, meta string) string {
		if v := labels[label]; v != "" {
			return v
		}
		return meta
	}
	return engine.Sandbox{
		ID:           id,
		PodUID:       or(labelPodUID, md.GetUid()),
		PodName:      or(labelPodName, md.GetName()),
		PodNamespace: or(labelPodNamespace, md.GetNamespace()),
		Attempt:      md.GetAttempt(),
		State:        sandboxState(st),
		CreatedAt:    nsTime(created),
	}
}

// ListImages lists every image.
func (c *Client) ListImages(ctx context.Context) ([]engine.Image, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	resp, err := c.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, c.mapError("list images", err)
	}
	out := make([]engine.Image, len(resp.GetImages()))
	for i, im := range resp.GetImages() {
		out[i] = toImage(im)
	}
	return out, nil
}

// ImageStatus returns one image by ID or reference. A runtime answers a
// missing image with an empty response, not an error (containerd does);
// either way the error wraps engine.ErrNotFound.
func (c *Client) ImageStatus(ctx context.Context, id string) (engine.Image, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: id}})
	if err != nil {
		return engine.Image{}, c.mapError("image status "+id, err)
	}
	if resp.GetImage() == nil {
		return engine.Image{}, fmt.Errorf("image status %s: %w", id, engine.ErrNotFound)
	}
	return toImage(resp.GetImage()), nil
}

// ListContainers lists every container, in every state. With
// Options.ExitDetails it also fills the exit details of the containers
// that are not running.
func (c *Client) ListContainers(ctx context.Context) ([]engine.Container, error) {
	rctx, cancel := c.readContext(ctx)
	var list containerList // decoded straight into engine types: see decode.go
	err := c.conn.Invoke(rctx, runtimeapi.RuntimeService_ListContainers_FullMethodName,
		&runtimeapi.ListContainersRequest{}, &list, rawCall)
	cancel()
	if err != nil {
		return nil, c.mapError("list containers", err)
	}
	out := list.items
	if c.o.ExitDetails {
		if err := c.fillExitDetails(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fillExitDetails asks ContainerStatus for the exit details of the
// containers that are neither running nor just created, a bounded number
// at a time, and caches them for exited containers, which do not change.
// A container removed in the meantime is skipped.
func (c *Client) fillExitDetails(ctx context.Context, cs []engine.Container) error {
	todo := c.cachedExits(cs)
	if len(todo) == 0 {
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(c.o.StatusConcurrency, len(todo)) {
		wg.Go(func() {
			for i := range work {
				k := &cs[i]
				rctx, rcancel := c.readContext(ctx)
				resp, err := c.rt.ContainerStatus(rctx, &runtimeapi.ContainerStatusRequest{ContainerId: k.ID})
				rcancel()
				if err != nil {
					err = c.mapError("container status "+k.ID, err)
					if !errors.Is(err, engine.ErrNotFound) {
						errOnce.Do(func() { firstErr = err; cancel() })
					}
					continue
				}
				d := detailsOf(resp.GetStatus())
				d.apply(k)
				if k.State == engine.ContainerExited {
					c.mu.Lock()
					c.exits[k.ID] = d
					c.mu.Unlock()
				}
			}
		})
	}
feed:
	for _, i := range todo {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return fmt.Errorf("container exit details: %w", ctx.Err())
	}
	return firstErr
}

// cachedExits fills in the cached exit details of exited containers and
// returns the indexes in cs of the containers still to ask about. It
// forgets the cached containers cs no longer lists.
func (c *Client) cachedExits(cs []engine.Container) (todo []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]bool, len(cs))
	for i := range cs {
		k := &cs[i]
		if k.State != engine.ContainerExited && k.State != engine.ContainerUnknown {
			continue
		}
		seen[k.ID] = true
		if d, ok := c.exits[k.ID]; ok && k.State == engine.ContainerExited {
			d.apply(k)
			continue
		}
		todo = append(todo, i)
	}
	gone := 0
	for id := range c.exits {
		if !seen[id] {
			delete(c.exits, id)
			gone++
		}
	}
	if gone > len(c.exits) {
		// A Go map keeps the room of the most it ever held (maps.Clone
		// too): after a pass removed most of the dead containers, the
		// cache would keep their room for as long as the dashboard runs.
		c.exits = maps.Collect(maps.All(c.exits))
	}
	return todo
}

// containerInfo is the part of containerd's verbose ContainerStatus info
// this package reads.
type containerInfo struct {
	SandboxID string `json:"sandboxID"`
}

// ContainerStatus returns one container with its exit details. The CRI
// status does not carry the sandbox ID; it is read from the runtime's
// verbose info where the runtime gives it (containerd does).
func (c *Client) ContainerStatus(ctx context.Context, id string) (engine.Container, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return engine.Container{}, c.mapError("container status "+id, err)
	}
	s := resp.GetStatus()
	if s == nil {
		return engine.Container{}, fmt.Errorf("container status %s: %w", id, engine.ErrNotFound)
	}
	k := engine.Container{
		ID:        s.GetId(),
		PodUID:    s.GetLabels()[labelPodUID],
		Name:      s.GetMetadata().GetName(),
		Attempt:   s.GetMetadata().GetAttempt(),
		ImageID:   imageID(s.GetImageId(), s.GetImageRef()),
		ImageRef:  s.GetImage().GetImage(),
		State:     containerState(s.GetState()),
		CreatedAt: nsTime(s.GetCreatedAt()),
	}
	detailsOf(s).apply(&k)
	var info containerInfo
	if raw := resp.GetInfo()["info"]; raw != "" && json.Unmarshal([]byte(raw), &info) == nil {
		k.PodSandboxID = info.SandboxID
	}
	return k, nil
}

// ListSandboxes lists every pod sandbox. LogDirectory is left empty: only
// SandboxStatus has it.
func (c *Client) ListSandboxes(ctx context.Context) ([]engine.Sandbox, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, c.mapError("list sandboxes", err)
	}
	out := make([]engine.Sandbox, len(resp.GetItems()))
	for i, s := range resp.GetItems() {
		out[i] = toSandbox(s)
	}
	return out, nil
}

// sandboxInfo is the part of the verbose PodSandboxStatus info (key
// "info") this package reads. containerd and CRI-O both give the image
// the sandbox runs; containerd also gives the sandbox config, with its
// log directory.
type sandboxInfo struct {
	Image  string `json:"image"`
	Config *struct {
		LogDirectory string `json:"log_directory"`
	} `json:"config"`
}

func (c *Client) sandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatusResponse, sandboxInfo, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return nil, sandboxInfo{}, c.mapError("sandbox status "+id, err)
	}
	if resp.GetStatus() == nil {
		return nil, sandboxInfo{}, fmt.Errorf("sandbox status %s: %w", id, engine.ErrNotFound)
	}
	var info sandboxInfo
	if raw := resp.GetInfo()["info"]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &info) // the info is optional and runtime-specific
	}
	c.mu.Lock()
	c.sandboxImages[resp.GetStatus().GetId()] = info.Image
	c.sandboxLearnt = true
	c.mu.Unlock()
	return resp, info, nil
}

// SandboxStatus returns one sandbox, with its log directory when the
// runtime's verbose info gives it.
func (c *Client) SandboxStatus(ctx context.Context, id string) (engine.Sandbox, error) {
	resp, info, err := c.sandboxStatus(ctx, id)
	if err != nil {
		return engine.Sandbox{}, err
	}
	s := resp.GetStatus()
	sb := sandboxFrom(s.GetId(), s.GetMetadata(), s.GetLabels(), s.GetState(), s.GetCreatedAt())
	sb.ConfigSource = s.GetAnnotations()[annotationConfigSource]
	if info.Config != nil {
		sb.LogDirectory = info.Config.LogDirectory
	}
	return sb, nil
}

// ImageFs reports the image filesystem from ImageFsInfo: its mountpoint
// (the engine measures it) and what the runtime says its images use.
func (c *Client) ImageFs(ctx context.Context) (engine.ImageFsUsage, error) {
	rctx, cancel := c.readContext(ctx)
	resp, err := c.img.ImageFsInfo(rctx, &runtimeapi.ImageFsInfoRequest{})
	cancel()
	if err != nil {
		return engine.ImageFsUsage{}, c.mapError("image fs info", err)
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return engine.ImageFsUsage{}, fmt.Errorf("image fs info: the runtime reports no image filesystem")
	}
	fs := resp.GetImageFilesystems()[0]
	u := engine.ImageFsUsage{
		Mountpoint: fs.GetFsId().GetMountpoint(),
		UsedBytes:  int64(fs.GetUsedBytes().GetValue()),
		InodesUsed: int64(fs.GetInodesUsed().GetValue()),
	}
	return u, nil
}

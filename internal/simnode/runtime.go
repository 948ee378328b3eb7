package simnode

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeService serves the CRI RuntimeService from a Node.
type runtimeService struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	n *Node
}

func (r *runtimeService) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       r.n.o.RuntimeName,
		RuntimeVersion:    r.n.o.RuntimeVersion,
		RuntimeApiVersion: "v1",
	}, nil
}

// statusConfig is the part of containerd's CRI config that its verbose
// Status reports under "config" and that nodegc reads.
type statusConfig struct {
	SandboxImage string `json:"sandboxImage"`
	Snapshotter  string `json:"snapshotter"`
}

func (r *runtimeService) Status(_ context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	resp := &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}}
	if !req.GetVerbose() {
		return resp, nil
	}
	r.n.mu.Lock()
	fs := r.n.fsStats()
	r.n.mu.Unlock()
	cfg, err := json.Marshal(statusConfig{SandboxImage: r.n.o.SandboxImage, Snapshotter: "overlayfs"})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "marshal config: %v", err)
	}
	fsj, err := json.Marshal(fs)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "marshal image fs: %v", err)
	}
	resp.Info = map[string]string{"config": string(cfg)}
	if !r.n.o.Unmarked {
		resp.Info[ImageFsInfoKey] = string(fsj)
	}
	return resp, nil
}

func (r *runtimeService) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	md := req.GetConfig().GetMetadata()
	if md == nil || md.Name == "" || md.Uid == "" || md.Namespace == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox config must include metadata with name, uid and namespace")
	}
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sandboxImage()
	s := &sandbox{
		id:          n.hexID(),
		uid:         md.Uid,
		name:        md.Name,
		namespace:   md.Namespace,
		attempt:     md.Attempt,
		ready:       true,
		createdAt:   n.stamp(),
		image:       n.o.SandboxImage,
		logDir:      req.GetConfig().GetLogDirectory(),
		labels:      copyMap(req.GetConfig().GetLabels()),
		annotations: copyMap(req.GetConfig().GetAnnotations()),
	}
	s.build()
	n.sandboxes.add(s)
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: s.id}, nil
}

// sandboxByID finds a sandbox by ID or unique ID prefix, as containerd does.
func (n *Node) sandboxByID(id string) (*sandbox, error) {
	return byIDOrPrefix(&n.sandboxes, "sandbox", id)
}

// containerByID finds a container by ID or unique ID prefix.
func (n *Node) containerByID(id string) (*container, error) {
	return byIDOrPrefix(&n.containers, "container", id)
}

// byIDOrPrefix finds a row of t by ID or unique ID prefix, with
// containerd's errors: NotFound, or InvalidArgument for an ambiguous
// prefix.
func byIDOrPrefix[T row](t *table[T], kind, id string) (T, error) {
	if v, ok := t.get(id); ok {
		return v, nil
	}
	var found T
	if id != "" {
		n := 0
		for v := range t.all() {
			if strings.HasPrefix(v.key(), id) {
				if n++; n > 1 {
					var zero T
					return zero, status.Errorf(codes.InvalidArgument, "%s ID prefix %q is ambiguous", kind, id)
				}
				found = v
			}
		}
		if n == 1 {
			return found, nil
		}
	}
	var zero T
	return zero, status.Errorf(codes.NotFound, "an error occurred when try to find %s %q: not found", kind, id)
}

// stopContainer makes a running or unknown container exited; others are
// left alone, as in containerd.
func (n *Node) stopContainer(c *container, exitCode int32) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		return
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = n.stamp()
	c.exitCode = exitCode
	c.build()
	n.emit(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, c)
}

func (r *runtimeService) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.sandboxByID(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	for _, c := range s.live() {
		n.stopContainer(c, 137)
	}
	if s.ready {
		s.ready = false
		s.build()
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (r *runtimeService) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.sandboxByID(req.GetPodSandboxId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.RemovePodSandboxResponse{}, nil // idempotent, as the CRI asks
	} else if err != nil {
		return nil, err
	}
	live := s.live()
	for _, c := range live {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q has running container %q", s.id, c.id)
		}
	}
	for _, c := range live {
		n.containers.remove(c)
		n.emit(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, c)
	}
	n.sandboxes.remove(s)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// sandboxInfo is the part of containerd's verbose PodSandboxStatus "info"
// that nodegc reads.
type sandboxInfo struct {
	Image          string         `json:"image"`
	RuntimeHandler string         `json:"runtimeHandler"`
	Config         *sandboxConfig `json:"config"`
}

type sandboxConfig struct {
	Metadata     *runtimeapi.PodSandboxMetadata `json:"metadata"`
	LogDirectory string                         `json:"log_directory,omitempty"`
}

func (r *runtimeService) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	n := r.n
	n.mu.Lock()
	s, err := n.sandboxByID(req.GetPodSandboxId())
	if err != nil {
		n.mu.Unlock()
		return nil, err
	}
	st := &runtimeapi.PodSandboxStatus{
		Id:          s.id,
		Metadata:    s.metadata(),
		State:       s.state(),
		CreatedAt:   s.createdAt,
		Network:     &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.1"},
		Labels:      s.labels,
		Annotations: s.annotations,
	}
	info := sandboxInfo{Image: s.image, Config: &sandboxConfig{Metadata: s.metadata(), LogDirectory: s.logDir}}
	n.mu.Unlock()
	resp := &runtimeapi.PodSandboxStatusResponse{Status: st}
	if req.GetVerbose() {
		b, err := json.Marshal(info)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "marshal sandbox info: %v", err)
		}
		resp.Info = map[string]string{"info": string(b)}
	}
	return resp, nil
}

func labelsMatch(labels, selector map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (r *runtimeService) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	n := r.n
	f := req.GetFilter()
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*runtimeapi.PodSandbox, 0, n.sandboxes.len())
	for s := range n.sandboxes.all() {
		if f != nil {
			if f.Id != "" && !strings.HasPrefix(s.id, f.Id) {
				continue
			}
			if f.State != nil && f.State.State != s.state() {
				continue
			}
			if !labelsMatch(s.labels, f.LabelSelector) {
				continue
			}
		}
		out = append(out, s.msg)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (r *runtimeService) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	if cfg.GetMetadata().GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "container config must include metadata with a name")
	}
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.sandboxByID(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if !s.ready {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", s.id)
	}
	ref := cfg.GetImage().GetImage()
	im, ok := n.refs[ref]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "failed to resolve image %q: not found", ref)
	}
	logPath := ""
	if s.logDir != "" && cfg.GetLogPath() != "" {
		logPath = path.Join(s.logDir, cfg.GetLogPath())
	}
	c := &container{
		id:          n.hexID(),
		sandboxID:   s.id,
		uid:         s.uid,
		name:        cfg.Metadata.Name,
		attempt:     cfg.Metadata.Attempt,
		spec:        &runtimeapi.ImageSpec{Image: ref},
		imageID:     im.id,
		state:       runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt:   n.stamp(),
		logPath:     logPath,
		labels:      copyMap(cfg.GetLabels()),
		annotations: copyMap(cfg.GetAnnotations()),
	}
	if c.labels == nil {
		c.labels = map[string]string{}
	}
	if _, ok := c.labels[labelPodUID]; !ok && s.labels[labelPodUID] != "" {
		// crictl create passes no kubelet labels; keep the pod's so the
		// container still belongs to it.
		c.labels[labelPodUID] = s.labels[labelPodUID]
	}
	c.build()
	n.containers.add(c)
	s.containers = append(s.containers, c)
	n.emit(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, c)
	return &runtimeapi.CreateContainerResponse{ContainerId: c.id}, nil
}

func (r *runtimeService) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := n.containerByID(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is in %s state", c.id, c.state)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = n.stamp()
	c.build()
	n.emit(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, c)
	return &runtimeapi.StartContainerResponse{}, nil
}

func (r *runtimeService) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := n.containerByID(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	code := int32(0)
	if req.GetTimeout() == 0 {
		code = 137
	}
	n.stopContainer(c, code)
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *runtimeService) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	n := r.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c, err := n.containerByID(req.GetContainerId())
	if status.Code(err) == codes.NotFound {
		return &runtimeapi.RemoveContainerResponse{}, nil // idempotent, as the CRI asks
	} else if err != nil {
		return nil, err
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is running, stop it first", c.id)
	}
	n.containers.remove(c)
	n.emit(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, c)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *runtimeService) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	n := r.n
	f := req.GetFilter()
	n.mu.Lock()
	defer n.mu.Unlock()
	if f != nil && f.Id != "" {
		c, err := n.containerByID(f.Id)
		if err != nil || (f.State != nil && f.State.State != c.state) ||
			(f.PodSandboxId != "" && !strings.HasPrefix(c.sandboxID, f.PodSandboxId)) || !labelsMatch(c.labels, f.LabelSelector) {
			return &runtimeapi.ListContainersResponse{}, nil
		}
		return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{c.msg}}, nil
	}
	out := make([]*runtimeapi.Container, 0, n.containers.len())
	for c := range n.containers.all() {
		if f != nil {
			if f.State != nil && f.State.State != c.state {
				continue
			}
			if f.PodSandboxId != "" && !strings.HasPrefix(c.sandboxID, f.PodSandboxId) {
				continue
			}
			if !labelsMatch(c.labels, f.LabelSelector) {
				continue
			}
		}
		out = append(out, c.msg)
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// containerInfo is the part of containerd's verbose ContainerStatus
// "info" that nodegc reads.
type containerInfo struct {
	SandboxID string `json:"sandboxID"`
}

func (r *runtimeService) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	n := r.n
	n.mu.Lock()
	c, err := n.containerByID(req.GetContainerId())
	if err != nil {
		n.mu.Unlock()
		return nil, err
	}
	st, sandboxID := c.status(), c.sandboxID
	n.mu.Unlock()
	resp := &runtimeapi.ContainerStatusResponse{Status: st}
	if req.GetVerbose() {
		b, err := json.Marshal(containerInfo{SandboxID: sandboxID})
		if err != nil {
			return nil, status.Errorf(codes.Internal, "marshal container info: %v", err)
		}
		resp.Info = map[string]string{"info": string(b)}
	}
	return resp, nil
}

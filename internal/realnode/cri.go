package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The labels the kubelet puts on sandboxes and containers, which nodegc
// reads to group containers into evict units.
const (
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelContainerName = "io.kubernetes.container.name"
)

// The pod QoS classes RunPod accepts, as the kubelet names its cgroups.
const (
	QOSGuaranteed = "guaranteed"
	QOSBurstable  = "burstable"
	QOSBestEffort = "besteffort"
)

// CgroupParent is the kubelet's cgroupfs-driver cgroup for a pod:
// /kubepods/pod<uid> when guaranteed, else /kubepods/<qos>/pod<uid>.
func CgroupParent(qos, uid string) (string, error) {
	switch qos {
	case QOSGuaranteed:
		return "/kubepods/pod" + uid, nil
	case QOSBurstable, QOSBestEffort:
		return "/kubepods/" + qos + "/pod" + uid, nil
	}
	return "", fmt.Errorf("qos %q: want %s, %s or %s", qos, QOSGuaranteed, QOSBurstable, QOSBestEffort)
}

// RunPod runs a pod sandbox as the kubelet would: host network (no CNI),
// its own PID namespace, the kubelet's labels, the cgroup parent of its QoS
// class ("" means besteffort) and a log directory <ns>_<name>_<uid> under
// PodLogsDir. Running the same pod UID again makes its next attempt (0, 1,
// ...), so a pod can have an older sandbox beside its newest.
func (n *Node) RunPod(name, namespace, uid, qos string) (string, error) {
	if qos == "" {
		qos = QOSBestEffort
	}
	parent, err := CgroupParent(qos, uid)
	if err != nil {
		return "", fmt.Errorf("run pod %s/%s: %w", namespace, name, err)
	}
	n.mu.Lock()
	attempt := n.attempts[uid]
	n.attempts[uid]++
	n.mu.Unlock()
	logDir := filepath.Join(n.podLogs, namespace+"_"+name+"_"+uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return "", fmt.Errorf("run pod %s/%s: %w", namespace, name, err)
	}
	if err := recordCgroup(n.dir, parent); err != nil {
		return "", fmt.Errorf("run pod %s/%s: %w", namespace, name, err)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid, Attempt: attempt},
		LogDirectory: logDir,
		Labels: map[string]string{
			LabelPodUID:       uid,
			LabelPodName:      name,
			LabelPodNamespace: namespace,
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: parent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaces(),
			},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	resp, err := n.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return "", fmt.Errorf("run pod %s/%s: %w", namespace, name, err)
	}
	n.mu.Lock()
	n.pods[resp.PodSandboxId] = cfg
	n.mu.Unlock()
	return resp.PodSandboxId, nil
}

// namespaces is the kubelet's choice for a hostNetwork pod without
// shareProcessNamespace.
func namespaces() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
}

// StartContainer creates and starts a container of the harness image image
// (a ref or ID) in a sandbox RunPod made, running nodegc-testbin with args
// (none: sleep until stopped). It carries the kubelet's labels and logs to
// <name>/<attempt>.log in the pod's log directory. CRI refuses a second
// container with the same name and attempt in a sandbox, so a restart of a
// container takes the next attempt.
func (n *Node) StartContainer(sandboxID, name, image string, attempt uint32, args ...string) (string, error) {
	n.mu.Lock()
	pod := n.pods[sandboxID]
	n.mu.Unlock()
	if pod == nil {
		return "", fmt.Errorf("start container %s: sandbox %s was not made by this node's RunPod", name, sandboxID)
	}
	md := pod.GetMetadata()
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Args:     args,
		Labels: map[string]string{
			LabelPodUID:        md.GetUid(),
			LabelPodName:       md.GetName(),
			LabelPodNamespace:  md.GetNamespace(),
			LabelContainerName: name,
		},
		LogPath: filepath.Join(name, strconv.FormatUint(uint64(attempt), 10)+".log"),
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaces()},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	created, err := n.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID, Config: cfg, SandboxConfig: pod,
	})
	if err != nil {
		return "", fmt.Errorf("create container %s in %s: %w", name, sandboxID, err)
	}
	if _, err := n.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		return "", fmt.Errorf("start container %s (%s): %w", name, created.ContainerId, err)
	}
	return created.ContainerId, nil
}

// ExitedContainer starts a container whose command exits with code and
// waits until CRI reports it EXITED: a real dead container.
func (n *Node) ExitedContainer(sandboxID, name, image string, attempt uint32, code int) (string, error) {
	id, err := n.StartContainer(sandboxID, name, image, attempt, "exit", strconv.Itoa(code))
	if err != nil {
		return "", err
	}
	if err := n.WaitContainerState(id, runtimeapi.ContainerState_CONTAINER_EXITED); err != nil {
		return "", err
	}
	return id, nil
}

// WaitContainerState polls CRI until the container is in state.
func (n *Node) WaitContainerState(id string, state runtimeapi.ContainerState) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for {
		resp, err := n.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err == nil && resp.GetStatus().GetState() == state {
			return nil
		}
		select {
		case <-ctx.Done():
			got := resp.GetStatus().GetState().String()
			if err != nil {
				got = err.Error()
			}
			return fmt.Errorf("container %s: not %s after %s (last: %s)", id, state, opTimeout, got)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StopContainer stops a container, giving it timeout to exit on SIGTERM.
func (n *Node) StopContainer(id string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+timeout)
	defer cancel()
	if _, err := n.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: int64(timeout / time.Second)}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

// StopPod stops a sandbox and its containers, leaving it NOTREADY with its
// dead containers, as the kubelet leaves a pod that terminated.
func (n *Node) StopPod(sandboxID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := n.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxID}); err != nil {
		return fmt.Errorf("stop pod %s: %w", sandboxID, err)
	}
	return nil
}

package nodetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// FakeRuntime is an in-memory Runtime for the executor's and scheduler's
// unit tests. It records every call and can fail chosen calls. Tests above
// the executor use the simulated node over a real socket instead.
type FakeRuntime struct {
	Mu          sync.Mutex
	RuntimeInfo model.RuntimeInfo
	Fs          model.FsStats
	Images      map[string]model.Image
	Containers  map[string]model.Container
	Sandboxes   map[string]model.Sandbox
	Calls       []string
	// Fail maps "Method id" (or "Method *") to the error to return.
	Fail map[string]error
	// Before runs before a mutating call, to simulate races.
	Before func(method, id string)
}

// NewFakeRuntime is an empty fake runtime with a 1000-byte image
// filesystem 90% full at /fake.
func NewFakeRuntime() *FakeRuntime {
	return &FakeRuntime{
		RuntimeInfo: model.RuntimeInfo{Name: "fake", Version: "1.0", Endpoint: "unix:///fake.sock"},
		Fs:          model.FsStats{Mountpoint: "/fake", CapacityBytes: 1000, AvailableBytes: 100, UsedBytes: 900},
		Images:      map[string]model.Image{},
		Containers:  map[string]model.Container{},
		Sandboxes:   map[string]model.Sandbox{},
		Fail:        map[string]error{},
	}
}

func (f *FakeRuntime) call(method, id string) error {
	f.Calls = append(f.Calls, method+" "+id)
	if err, ok := f.Fail[method+" "+id]; ok {
		return err
	}
	return f.Fail[method+" *"]
}

// MutatingCalls are the calls made so far that change the node, in order.
func (f *FakeRuntime) MutatingCalls() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	var out []string
	for _, c := range f.Calls {
		if m, _, _ := strings.Cut(c, " "); slices.Contains([]string{"RemoveImage", "StopContainer", "RemoveContainer", "StopSandbox", "RemoveSandbox"}, m) {
			out = append(out, c)
		}
	}
	return out
}

// Info is the runtime's info.
func (f *FakeRuntime) Info(ctx context.Context) (model.RuntimeInfo, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.RuntimeInfo, f.call("Info", "")
}

// ListImages lists the images by ID.
func (f *FakeRuntime) ListImages(ctx context.Context) ([]model.Image, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	out := make([]model.Image, 0, len(f.Images))
	for _, i := range f.Images {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b model.Image) int { return strings.Compare(a.ID, b.ID) })
	return out, f.call("ListImages", "")
}

// ImageStatus reads one image.
func (f *FakeRuntime) ImageStatus(ctx context.Context, id string) (model.Image, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.call("ImageStatus", id); err != nil {
		return model.Image{}, err
	}
	i, ok := f.Images[id]
	if !ok {
		return model.Image{}, fmt.Errorf("image %s: %w", id, model.ErrNotFound)
	}
	return i, nil
}

// ListContainers lists the containers by ID.
func (f *FakeRuntime) ListContainers(ctx context.Context) ([]model.Container, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	out := make([]model.Container, 0, len(f.Containers))
	for _, c := range f.Containers {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b model.Container) int { return strings.Compare(a.ID, b.ID) })
	return out, f.call("ListContainers", "")
}

// ContainerStatus reads one container.
func (f *FakeRuntime) ContainerStatus(ctx context.Context, id string) (model.Container, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.call("ContainerStatus", id); err != nil {
		return model.Container{}, err
	}
	c, ok := f.Containers[id]
	if !ok {
		return model.Container{}, fmt.Errorf("container %s: %w", id, model.ErrNotFound)
	}
	return c, nil
}

// ListSandboxes lists the sandboxes by ID.
func (f *FakeRuntime) ListSandboxes(ctx context.Context) ([]model.Sandbox, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	out := make([]model.Sandbox, 0, len(f.Sandboxes))
	for _, s := range f.Sandboxes {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b model.Sandbox) int { return strings.Compare(a.ID, b.ID) })
	return out, f.call("ListSandboxes", "")
}

// SandboxStatus reads one sandbox.
func (f *FakeRuntime) SandboxStatus(ctx context.Context, id string) (model.Sandbox, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if err := f.call("SandboxStatus", id); err != nil {
		return model.Sandbox{}, err
	}
	s, ok := f.Sandboxes[id]
	if !ok {
		return model.Sandbox{}, fmt.Errorf("sandbox %s: %w", id, model.ErrNotFound)
	}
	return s, nil
}

// ImageFs is the image filesystem's mountpoint and usage.
func (f *FakeRuntime) ImageFs(ctx context.Context) (model.ImageFsUsage, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	fs := f.Fs
	return model.ImageFsUsage{Mountpoint: fs.Mountpoint, UsedBytes: fs.UsedBytes}, f.call("ImageFs", "")
}

// Statfs is the engine's Statfs over the fake: its image filesystem at
// its mountpoint; any other path (the root fs) cannot be measured.
func (f *FakeRuntime) Statfs(path string) (model.FsStats, error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if path != f.Fs.Mountpoint {
		return model.FsStats{}, fmt.Errorf("statfs %s: not on the fake runtime", path)
	}
	return f.Fs, nil
}

func (f *FakeRuntime) mutate(method, id string) error {
	if f.Before != nil {
		f.Before(method, id)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return f.call(method, id)
}

// RemoveImage removes the image and frees its bytes.
func (f *FakeRuntime) RemoveImage(ctx context.Context, id string) error {
	if err := f.mutate("RemoveImage", id); err != nil {
		return err
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	img, ok := f.Images[id]
	if !ok {
		return fmt.Errorf("image %s: %w", id, model.ErrNotFound)
	}
	delete(f.Images, id)
	f.Fs.AvailableBytes += img.SizeBytes
	f.Fs.UsedBytes -= img.SizeBytes
	return nil
}

// StopContainer marks the container exited.
func (f *FakeRuntime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	if err := f.mutate("StopContainer", id); err != nil {
		return err
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c, ok := f.Containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, model.ErrNotFound)
	}
	c.State = model.ContainerExited
	f.Containers[id] = c
	return nil
}

// RemoveContainer removes a container that is not running.
func (f *FakeRuntime) RemoveContainer(ctx context.Context, id string) error {
	if err := f.mutate("RemoveContainer", id); err != nil {
		return err
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	c, ok := f.Containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, model.ErrNotFound)
	}
	if c.State == model.ContainerRunning {
		return fmt.Errorf("container %s is running", id)
	}
	delete(f.Containers, id)
	return nil
}

// StopSandbox marks the sandbox not ready.
func (f *FakeRuntime) StopSandbox(ctx context.Context, id string) error {
	if err := f.mutate("StopSandbox", id); err != nil {
		return err
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	s, ok := f.Sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %s: %w", id, model.ErrNotFound)
	}
	s.State = model.SandboxNotReady
	f.Sandboxes[id] = s
	return nil
}

// RemoveSandbox removes the sandbox.
func (f *FakeRuntime) RemoveSandbox(ctx context.Context, id string) error {
	if err := f.mutate("RemoveSandbox", id); err != nil {
		return err
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if _, ok := f.Sandboxes[id]; !ok {
		return fmt.Errorf("sandbox %s: %w", id, model.ErrNotFound)
	}
	delete(f.Sandboxes, id)
	return nil
}

package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// fakeRuntime is an in-memory Runtime for the executor's and scheduler's
// unit tests. It records every call and can fail chosen calls. Tests above
// the executor use the simulated node over a real socket instead.
type fakeRuntime struct {
	mu         sync.Mutex
	info       RuntimeInfo
	fs         FsStats
	images     map[string]Image
	containers map[string]Container
	sandboxes  map[string]Sandbox
	calls      []string
	// fail maps "Method id" (or "Method *") to the error to return.
	fail map[string]error
	// before runs before a mutating call, to simulate races.
	before func(method, id string)
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		info:       RuntimeInfo{Name: "fake", Version: "1.0", Endpoint: "unix:///fake.sock"},
		fs:         FsStats{Mountpoint: "/fake", CapacityBytes: 1000, AvailableBytes: 100, UsedBytes: 900},
		images:     map[string]Image{},
		containers: map[string]Container{},
		sandboxes:  map[string]Sandbox{},
		fail:       map[string]error{},
	}
}

func (f *fakeRuntime) call(method, id string) error {
	f.calls = append(f.calls, method+" "+id)
	if err, ok := f.fail[method+" "+id]; ok {
		return err
	}
	return f.fail[method+" *"]
}

func (f *fakeRuntime) mutatingCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if m, _, _ := cutSpace(c); slices.Contains([]string{"RemoveImage", "StopContainer", "RemoveContainer", "StopSandbox", "RemoveSandbox"}, m) {
			out = append(out, c)
		}
	}
	return out
}

func cutSpace(s string) (string, string, bool) {
	for i := range s {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func (f *fakeRuntime) Info(ctx context.Context) (RuntimeInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.info, f.call("Info", "")
}

func (f *fakeRuntime) ListImages(ctx context.Context) ([]Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Image, 0, len(f.images))
	for _, i := range f.images {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b Image) int { return cmpString(a.ID, b.ID) })
	return out, f.call("ListImages", "")
}

func (f *fakeRuntime) ImageStatus(ctx context.Context, id string) (Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ImageStatus", id); err != nil {
		return Image{}, err
	}
	i, ok := f.images[id]
	if !ok {
		return Image{}, fmt.Errorf("image %s: %w", id, ErrNotFound)
	}
	return i, nil
}

func (f *fakeRuntime) ListContainers(ctx context.Context) ([]Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Container, 0, len(f.containers))
	for _, c := range f.containers {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Container) int { return cmpString(a.ID, b.ID) })
	return out, f.call("ListContainers", "")
}

func (f *fakeRuntime) ContainerStatus(ctx context.Context, id string) (Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerStatus", id); err != nil {
		return Container{}, err
	}
	c, ok := f.containers[id]
	if !ok {
		return Container{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	return c, nil
}

func (f *fakeRuntime) ListSandboxes(ctx context.Context) ([]Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Sandbox, 0, len(f.sandboxes))
	for _, s := range f.sandboxes {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Sandbox) int { return cmpString(a.ID, b.ID) })
	return out, f.call("ListSandboxes", "")
}

func (f *fakeRuntime) SandboxStatus(ctx context.Context, id string) (Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("SandboxStatus", id); err != nil {
		return Sandbox{}, err
	}
	s, ok := f.sandboxes[id]
	if !ok {
		return Sandbox{}, fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	return s, nil
}

func (f *fakeRuntime) ImageFs(ctx context.Context) (ImageFsUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fs := f.fs
	return ImageFsUsage{Mountpoint: fs.Mountpoint, UsedBytes: fs.UsedBytes}, f.call("ImageFs", "")
}

// statfs is the engine's Statfs over the fake: its image filesystem at
// its mountpoint; any other path (the root fs) cannot be measured.
func (f *fakeRuntime) statfs(path string) (FsStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if path != f.fs.Mountpoint {
		return FsStats{}, fmt.Errorf("statfs %s: not on the fake runtime", path)
	}
	return f.fs, nil
}

func (f *fakeRuntime) mutate(method, id string) error {
	if f.before != nil {
		f.before(method, id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.call(method, id)
}

func (f *fakeRuntime) RemoveImage(ctx context.Context, id string) error {
	if err := f.mutate("RemoveImage", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.images[id]
	if !ok {
		return fmt.Errorf("image %s: %w", id, ErrNotFound)
	}
	delete(f.images, id)
	f.fs.AvailableBytes += img.SizeBytes
	f.fs.UsedBytes -= img.SizeBytes
	return nil
}

func (f *fakeRuntime) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	if err := f.mutate("StopContainer", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	c.State = ContainerExited
	f.containers[id] = c
	return nil
}

func (f *fakeRuntime) RemoveContainer(ctx context.Context, id string) error {
	if err := f.mutate("RemoveContainer", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	if c.State == ContainerRunning {
		return fmt.Errorf("container %s is running", id)
	}
	delete(f.containers, id)
	return nil
}

func (f *fakeRuntime) StopSandbox(ctx context.Context, id string) error {
	if err := f.mutate("StopSandbox", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[id]
	if !ok {
		return fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	s.State = SandboxNotReady
	f.sandboxes[id] = s
	return nil
}

func (f *fakeRuntime) RemoveSandbox(ctx context.Context, id string) error {
	if err := f.mutate("RemoveSandbox", id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sandboxes[id]; !ok {
		return fmt.Errorf("sandbox %s: %w", id, ErrNotFound)
	}
	delete(f.sandboxes, id)
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

package realnode

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Must is a Node bound to a test: the same operations without error
// results, each failing the test (t.Fatal) on error. Tests build their
// workload with it and keep the error-returning Node methods for the calls
// whose errors they assert on.
type Must struct {
	n  *Node
	tb testing.TB
}

// Must binds the node to tb.
func (n *Node) Must(tb testing.TB) Must { return Must{n: n, tb: tb} }

func (m Must) check(err error) {
	if err != nil {
		m.tb.Helper()
		m.tb.Fatalf("realnode: %v", err)
	}
}

// RunPod is Node.RunPod.
func (m Must) RunPod(name, namespace, uid, qos string) string {
	m.tb.Helper()
	id, err := m.n.RunPod(name, namespace, uid, qos)
	m.check(err)
	return id
}

// StartContainer is Node.StartContainer.
func (m Must) StartContainer(sandboxID, name, image string, attempt uint32, args ...string) string {
	m.tb.Helper()
	id, err := m.n.StartContainer(sandboxID, name, image, attempt, args...)
	m.check(err)
	return id
}

// ExitedContainer is Node.ExitedContainer.
func (m Must) ExitedContainer(sandboxID, name, image string, attempt uint32, code int) string {
	m.tb.Helper()
	id, err := m.n.ExitedContainer(sandboxID, name, image, attempt, code)
	m.check(err)
	return id
}

// WaitContainerState is Node.WaitContainerState.
func (m Must) WaitContainerState(id string, state runtimeapi.ContainerState) {
	m.tb.Helper()
	m.check(m.n.WaitContainerState(id, state))
}

// StopContainer is Node.StopContainer.
func (m Must) StopContainer(id string, timeout time.Duration) {
	m.tb.Helper()
	m.check(m.n.StopContainer(id, timeout))
}

// StopPod is Node.StopPod.
func (m Must) StopPod(sandboxID string) {
	m.tb.Helper()
	m.check(m.n.StopPod(sandboxID))
}

// BuildImage is Node.BuildImage.
func (m Must) BuildImage(name, tag string, size int64) (string, ImageRef) {
	m.tb.Helper()
	path, img, err := m.n.BuildImage(name, tag, size)
	m.check(err)
	return path, img
}

// Import is Node.Import.
func (m Must) Import(archive string) {
	m.tb.Helper()
	m.check(m.n.Import(archive))
}

// ImportImages is Node.ImportImages.
func (m Must) ImportImages(count int, size int64, prefix string) []ImageRef {
	m.tb.Helper()
	imgs, err := m.n.ImportImages(count, size, prefix)
	m.check(err)
	return imgs
}

// ImageFsUsage is Node.ImageFsUsage.
func (m Must) ImageFsUsage() FsUsage {
	m.tb.Helper()
	u, err := m.n.ImageFsUsage()
	m.check(err)
	return u
}

// Stop is Node.Stop.
func (m Must) Stop() {
	m.tb.Helper()
	m.check(m.n.Stop())
}

// Restart is Node.Restart.
func (m Must) Restart() {
	m.tb.Helper()
	m.check(m.n.Restart())
}

// State is Node.State.
func (m Must) State() State {
	m.tb.Helper()
	s, err := m.n.State()
	m.check(err)
	return s
}

// Ctr is Node.Ctr.
func (m Must) Ctr(args ...string) []byte {
	m.tb.Helper()
	out, err := m.n.Ctr(args...)
	m.check(err)
	return out
}

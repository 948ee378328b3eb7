package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// image re-checks and removes one image: it must still exist, be unpinned,
// not be a sandbox image and be used by no container in any state, by the
// view of the node, nor by a created or running container of a listing
// begun at most ViewWindow before the check (see ViewWindow).
func (x *executor) image(rm ImageRemoval, en *JournalEntry) ItemResult {
	it := ItemResult{Kind: ItemImage, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail, SizeBytes: rm.SizeBytes}
	if x.infoErr != nil {
		return recheckFailed(it, x.infoErr)
	}
	v, err := x.view.fresh(true)
	if err != nil {
		return viewFailed(it, err)
	}
	img, ok := v.image(rm.ID)
	if !ok {
		it.Outcome = OutcomeGone
		return it
	}
	en.RepoTags, en.RepoDigests, en.SizeBytes = img.RepoTags, img.RepoDigests, img.SizeBytes
	if img.Pinned {
		return skipped(it, "pinned since planning")
	}
	if img.SizeBytes < 0 {
		return skipped(it, fmt.Sprintf("the runtime reports an impossible size (%d bytes)", img.SizeBytes))
	}
	if IsSandboxImage(img, x.sandboxRefs) {
		return skipped(it, "sandbox image")
	}
	a, err := x.active.fresh(false)
	if err != nil {
		return viewFailed(it, err)
	}
	for _, v := range [2]*viewData{v, a} {
		if c, used := v.imageUser(img); used {
			return skipped(it, fmt.Sprintf("in use since planning by container %s (%s)", c.Name, c.ID))
		}
	}
	it = x.call(it, "remove image", func(ctx context.Context) error { return x.e.o.Remover.RemoveImage(ctx, rm.ID) })
	if it.Outcome == OutcomeRemoved {
		x.e.log.Info("removed image", "image", rm.ID, "tags", img.RepoTags, "size", img.SizeBytes, "reason", rm.Reason, "pass", x.passID)
	}
	return it
}

// container re-checks and removes one dead container, then its log file
// and its /var/log/containers link. A container running again is skipped;
// an UNKNOWN one is stopped first, as the kubelet does.
//
// The re-check is against the view of the node's running containers (see
// ViewWindow). EXITED is final in CRI (a runtime refuses to start an
// exited container; the kubelet creates a new one), so a container planned
// as exited that the view does not show running needs no more. A
// container planned in any other state can still change, one the view
// shows running is confirmed, and the log path is only in the container's
// status: the runtime is asked then, just before the removal.
func (x *executor) container(rm ContainerRemoval, en *JournalEntry) []ItemResult {
	it := ItemResult{Kind: ItemContainer, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail}
	v, err := x.running.fresh(false)
	if err != nil {
		return []ItemResult{viewFailed(it, err)}
	}
	cur, running := v.container(rm.ID)
	if !running {
		cur = Container{ID: rm.ID, PodUID: rm.PodUID, Name: rm.Name, PodSandboxID: rm.PodSandboxID, State: ContainerExited}
	}
	if running || rm.State != ContainerExited || x.mayHaveLogFile(rm) {
		if cur, err = rt(x, func(ctx context.Context) (Container, error) { return x.e.o.Reader.ContainerStatus(ctx, rm.ID) }); err != nil {
			return []ItemResult{recheckFailed(it, err)}
		}
	}
	en.PodUID, en.Name = cur.PodUID, cur.Name
	switch {
	case cur.State == ContainerRunning:
		return []ItemResult{skipped(it, "running since planning")}
	case !isDead(cur.State):
		return []ItemResult{skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))}
	case cur.State == ContainerUnknown:
		_, err := rt(x, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, x.e.o.Remover.StopContainer(ctx, rm.ID, StopTimeout)
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("stop unknown-state container: %v", err)
			return []ItemResult{it}
		}
	}
	// The logs go first, as the kubelet's removeContainer does
	// (pkg/kubelet/kuberuntime/kuberuntime_container.go): a crash between
	// the two then leaves a container whose next removal finds no log,
	// never a log no pass will find again.
	logs := x.containerLogs(cur, rm)
	for _, l := range logs {
		if l.Outcome == OutcomeFailed {
			it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("not removed: its log was not removed first (%s)", l.Error)
			return append([]ItemResult{it}, logs...)
		}
	}
	it = x.call(it, "remove container", func(ctx context.Context) error { return x.e.o.Remover.RemoveContainer(ctx, rm.ID) })
	if it.Outcome == OutcomeRemoved {
		x.e.log.Info("removed container", "container", rm.ID, "pod", cur.PodUID, "name", cur.Name, "reason", rm.Reason, "pass", x.passID)
	}
	return append([]ItemResult{it}, logs...)
}

// mayHaveLogFile reports whether a removed container can leave a log
// file for containerLogs: the kubelet writes a container's log in its
// pod's directory under podLogsDir (<namespace>_<name>_<uid>, or <uid>
// in the old layout: BuildPodLogsDirectory and
// parsePodUIDFromLogsDirectory in pkg/kubelet/kuberuntime/helpers.go), so
// a container whose pod has neither has no log file nodegc may remove, and
// its status need not be asked for the path. When the plan does not name
// the pod, any podLogsDir counts.
func (x *executor) mayHaveLogFile(rm ContainerRemoval) bool {
	root := x.e.o.Policy.PodLogsDir
	if root == "" {
		return false
	}
	dirs := []string{root}
	if rm.PodNamespace != "" && rm.PodName != "" && rm.PodUID != "" {
		dirs = []string{filepath.Join(root, rm.PodNamespace+"_"+rm.PodName+"_"+rm.PodUID), filepath.Join(root, rm.PodUID)}
	}
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			return true
		}
	}
	return false
}

// ReasonContainerRemoved is the reason of the log file and link removed
// with their container.
const ReasonContainerRemoved = "container-removed"

// containerLogs removes a container's log file and its
// /var/log/containers link before the container, as the kubelet's
// removeContainerLog (pkg/kubelet/kuberuntime/kuberuntime_container.go)
// does, each journalled with an intent and an outcome of its own. Unlike
// the kubelet it removes only a log path in the kubelet's layout
// (containerLogLayout) under its own pod's and container's directories,
// and a link that is a symlink; everything is reached from a directory
// handle without following symlinks. An absolute log path outside the
// layout is reported skipped and left alone.
func (x *executor) containerLogs(c Container, rm ContainerRemoval) []ItemResult {
	var out []ItemResult
	en := JournalEntry{Reason: ReasonContainerRemoved, PodUID: c.PodUID, Name: c.Name}
	if p := c.LogPath; p != "" && filepath.IsAbs(p) {
		it := ItemResult{Kind: ItemLog, ID: p, Reason: ReasonContainerRemoved, Detail: "log file of container " + c.ID}
		root := x.e.o.Policy.PodLogsDir
		podDir, ctr, file, ok := containerLogLayout(root, p)
		switch {
		case !ok:
			out = append(out, skipped(it, "not in the kubelet's layout "+filepath.Join(root, "<namespace>_<name>_<uid>/<container>/<N>.log")))
		case !ownLogDir(podDir, ctr, c, rm):
			out = append(out, skipped(it, "not in its own pod's and container's log directory"))
		default:
			out = append(out, x.removeLogged(it, en, "remove container log",
				func(context.Context) error { return removeContainerLogFile(root, podDir, ctr, file) }))
		}
	}
	if rm.PodName == "" || rm.PodNamespace == "" || c.Name == "" {
		return out
	}
	dir := x.e.containerLogsDir()
	name := filepath.Base(containerLogLink(dir, rm.PodName, rm.PodNamespace, c.Name, c.ID))
	d, err := openLogDir(dir)
	if err != nil {
		return out // no links dir, or one log GC must not touch
	}
	defer d.close()
	if st, err := d.lstat(name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		it := ItemResult{Kind: ItemLog, ID: filepath.Join(dir, name), Reason: ReasonContainerRemoved, Detail: "log link of container " + c.ID}
		out = append(out, x.removeLogged(it, en, "remove container log link",
			func(context.Context) error { return d.unlink(name) }))
	}
	return out
}

// ownLogDir reports whether a log in <podDir>/<ctr> belongs to container
// c, by what the runtime and the plan say of it: the pod directory names
// its pod's UID (and namespace and name, when the plan has them), the
// container directory its name.
func ownLogDir(podDir, ctr string, c Container, rm ContainerRemoval) bool {
	if c.PodUID != "" && podUIDFromLogDir(podDir) != c.PodUID || c.Name != "" && ctr != c.Name {
		return false
	}
	return rm.PodNamespace == "" || rm.PodName == "" || c.PodUID == "" || podDir == rm.PodNamespace+"_"+rm.PodName+"_"+c.PodUID
}

// containerLogLink is the kubelet's logSymlink
// (pkg/kubelet/kuberuntime/legacy.go): <dir>/<pod>_<ns>_<name>-<id>.log,
// the name cut to ext4's 255 bytes.
func containerLogLink(dir, pod, ns, name, id string) string {
	const suffix = ".log"
	base := fmt.Sprintf("%s_%s_%s-%s", pod, ns, name, id)
	if len(base) > 255-len(suffix) {
		base = base[:255-len(suffix)]
	}
	return filepath.Join(dir, base+suffix)
}

// sandbox re-checks, stops and removes one sandbox: it must not be READY
// and no container may reference it.
func (x *executor) sandbox(rm SandboxRemoval, en *JournalEntry) ItemResult {
	it := ItemResult{Kind: ItemSandbox, ID: rm.ID, Reason: rm.Reason}
	cur, err := rt(x, func(ctx context.Context) (Sandbox, error) { return x.e.o.Reader.SandboxStatus(ctx, rm.ID) })
	if err != nil {
		return recheckFailed(it, err)
	}
	en.PodUID, en.Name = cur.PodUID, cur.PodNamespace+"/"+cur.PodName
	if cur.State == SandboxReady {
		return skipped(it, "ready since planning")
	}
	if cur.State != SandboxNotReady {
		return skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))
	}
	v, err := x.view.fresh(false)
	if err != nil {
		return viewFailed(it, err)
	}
	if c, ok := v.sandboxUser(rm.ID); ok {
		return skipped(it, fmt.Sprintf("still holds container %s (%s)", c.Name, c.ID))
	}
	_, err = rt(x, func(ctx context.Context) (struct{}, error) { return struct{}{}, x.e.o.Remover.StopSandbox(ctx, rm.ID) })
	if err != nil && !errors.Is(err, ErrNotFound) {
		it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("stop sandbox: %v", err)
		return it
	}
	it = x.call(it, "remove sandbox", func(ctx context.Context) error { return x.e.o.Remover.RemoveSandbox(ctx, rm.ID) })
	if it.Outcome == OutcomeRemoved {
		x.e.log.Info("removed sandbox", "sandbox", rm.ID, "pod", cur.PodUID, "reason", rm.Reason, "pass", x.passID)
	}
	return it
}

// logPath re-checks and removes one log path: a pod log directory
// directly inside the pod logs directory, or a symlink directly inside
// /var/log/containers, reached from the directory's handle without
// following symlinks. A pod directory whose pod runs a container again, a
// symlink whose target exists or whose container has not exited, is
// skipped.
func (x *executor) logPath(rm LogRemoval) ItemResult {
	it := ItemResult{Kind: ItemLog, ID: rm.Path, Reason: rm.Reason}
	podDir, linkDir := x.e.o.Policy.PodLogsDir, x.e.containerLogsDir()
	// Only direct children: a nested path could pass through a symlinked
	// subdirectory to anywhere on the node.
	parent, name := filepath.Dir(rm.Path), filepath.Base(rm.Path)
	inPods := WithinDir(podDir, rm.Path) && parent == filepath.Clean(podDir)
	inLinks := WithinDir(linkDir, rm.Path) && parent == filepath.Clean(linkDir)
	if !inPods && !inLinks {
		return skipped(it, fmt.Sprintf("not directly inside %s or %s", podDir, linkDir))
	}
	d, err := openLogDir(parent)
	if err != nil {
		return recheckFailed(it, notFound(err))
	}
	defer d.close()
	st, err := d.lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		it.Outcome = OutcomeGone
		return it
	}
	if err != nil {
		return recheckFailed(it, err)
	}
	v, err := x.view.fresh(false)
	if err != nil {
		return viewFailed(it, err)
	}
	if inLinks {
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return skipped(it, "not a symlink")
		}
		if d.exists(name) {
			return skipped(it, "its target exists")
		}
		if c, ok := v.container(containerIDFromLink(rm.Path)); ok && c.State != ContainerExited {
			return skipped(it, "its container has not exited")
		}
		return x.call(it, "remove log symlink", func(context.Context) error { return d.unlink(name) })
	}
	uid := podUIDFromLogDir(name)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || uid == "" {
		return skipped(it, "not a pod log directory")
	}
	for _, c := range v.podContainers(uid) {
		if !isDead(c.State) {
			return skipped(it, fmt.Sprintf("pod runs container %s again", c.Name))
		}
	}
	return x.call(it, "remove pod log directory", func(context.Context) error { return d.removeAll(name) })
}

// WithinDir reports whether path is an absolute, clean path strictly inside
// dir (dir itself does not count). Log GC acts only on such paths, because
// runtimes report empty or relative log paths for containers other CRI
// clients made.
func WithinDir(dir, path string) bool {
	if !filepath.IsAbs(path) || !filepath.IsAbs(dir) || path != filepath.Clean(path) {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// recheckFailed records an item whose re-check could not be made: NotFound
// is already gone; anything else fails the item without removing it.
func recheckFailed(it ItemResult, err error) ItemResult {
	if errors.Is(err, ErrNotFound) {
		it.Outcome = OutcomeGone
		return it
	}
	it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("re-check: %v", err)
	return it
}

// viewFailed records an item whose view of the node could not be listed:
// it fails without removal, whatever the listing's error wraps (a
// NotFound from a listing says nothing of the item).
func viewFailed(it ItemResult, err error) ItemResult {
	it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("re-check: %v", err)
	return it
}

// skipped records an item the re-check kept.
func skipped(it ItemResult, why string) ItemResult {
	it.Outcome, it.Detail = OutcomeSkipped, why
	return it
}

package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/rules"
	"golang.org/x/sys/unix"
)

// recheck re-checks one dead container; its removal then removes its
// log file and its /var/log/containers link and then the container. A
// container running again is skipped; an UNKNOWN one is stopped first, as
// the kubelet's removeOldestN does (pkg/kubelet/kuberuntime/
// kuberuntime_gc.go, v1.36.3): kill, then the logs, then the container,
// and a kill that fails leaves both. Every mutating call comes after the
// removal's started line.
//
// The re-check is against the view of the node's running containers (see
// ViewWindow). EXITED is final in CRI (a runtime refuses to start an
// exited container; the kubelet creates a new one), so a container planned
// as exited that the view does not show running needs no more. A
// container planned in any other state can still change, one the view
// shows running is confirmed, and the log path is only in the container's
// status: the runtime is asked then, just before the removal.
func (rm containerCheck) recheck(x *executor, en *model.JournalEntry) checked {
	it := model.ItemResult{Kind: model.ItemContainer, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail}
	v, err := x.views.running.fresh(false)
	if err != nil {
		return checked{it: viewFailed(it, err)}
	}
	cur, running := v.container(rm.ID)
	if !running {
		cur = model.Container{ID: rm.ID, PodUID: rm.PodUID, Name: rm.Name, PodSandboxID: rm.PodSandboxID, State: model.ContainerExited}
	}
	if running || rm.State != model.ContainerExited || x.mayHaveLogFile(model.ContainerRemoval(rm)) {
		if cur, err = rt(x, func(ctx context.Context) (model.Container, error) { return x.d.Reader.ContainerStatus(ctx, rm.ID) }); err != nil {
			return checked{it: recheckFailed(it, err)}
		}
	}
	en.PodUID, en.Name = cur.PodUID, cur.Name
	switch {
	case cur.State == model.ContainerRunning:
		return checked{it: skipped(it, "running since planning")}
	case !rules.IsDead(cur.State):
		return checked{it: skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))}
	}
	r := &removal{what: "remove container",
		// The logs go before the container, as the kubelet's
		// removeContainer does (pkg/kubelet/kuberuntime/
		// kuberuntime_container.go): a crash between the two then leaves
		// a container whose next removal finds no log, never a log no
		// pass will find again.
		first: func() []model.ItemResult { return x.containerLogs(cur, model.ContainerRemoval(rm)) },
		call:  func(ctx context.Context) error { return x.d.Remover.RemoveContainer(ctx, rm.ID) },
		log:   []any{"container", rm.ID, "pod", cur.PodUID, "name", cur.Name}}
	if cur.State == model.ContainerUnknown {
		r.stop = func(ctx context.Context) error { return x.d.Remover.StopContainer(ctx, rm.ID, StopTimeout) }
	}
	return checked{it: it, remove: r}
}

// mayHaveLogFile reports whether a removed container can leave a log
// file for containerLogs: the kubelet writes a container's log in its
// pod's directory under podLogsDir (<namespace>_<name>_<uid>, or <uid>
// in the old layout: BuildPodLogsDirectory and
// parsePodUIDFromLogsDirectory in pkg/kubelet/kuberuntime/helpers.go), so
// a container whose pod has neither has no log file nodegc may remove, and
// its status need not be asked for the path. When the plan does not name
// the pod, any podLogsDir counts.
func (x *executor) mayHaveLogFile(rm model.ContainerRemoval) bool {
	root := x.d.PodLogsDir
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
func (x *executor) containerLogs(c model.Container, rm model.ContainerRemoval) []model.ItemResult {
	var out []model.ItemResult
	en := model.JournalEntry{Reason: ReasonContainerRemoved, PodUID: c.PodUID, Name: c.Name}
	if p := c.LogPath; p != "" && filepath.IsAbs(p) {
		it := model.ItemResult{Kind: model.ItemLog, ID: p, Reason: ReasonContainerRemoved, Detail: "log file of container " + c.ID}
		root := x.d.PodLogsDir
		podDir, ctr, file, ok := containerLogLayout(root, p)
		switch {
		case !ok:
			out = append(out, skipped(it, "not in the kubelet's layout "+filepath.Join(root, "<namespace>_<name>_<uid>/<container>/<N>.log")))
		case !ownLogDir(podDir, ctr, c, rm):
			out = append(out, skipped(it, "not in its own pod's and container's log directory"))
		default:
			out = append(out, x.journal.removeOwn(x.calls, it, en, &removal{what: "remove container log",
				call: func(context.Context) error { return removeContainerLogFile(root, podDir, ctr, file) }}))
		}
	}
	if rm.PodName == "" || rm.PodNamespace == "" || c.Name == "" {
		return out
	}
	dir := x.d.LinksDir
	name := filepath.Base(containerLogLink(dir, rm.PodName, rm.PodNamespace, c.Name, c.ID))
	d, err := x.linksDir(dir)
	if err != nil {
		return out // no links dir, or one log GC must not touch
	}
	if st, err := d.lstat(name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		it := model.ItemResult{Kind: model.ItemLog, ID: filepath.Join(dir, name), Reason: ReasonContainerRemoved, Detail: "log link of container " + c.ID}
		out = append(out, x.journal.removeOwn(x.calls, it, en, &removal{what: "remove container log link",
			call: func(context.Context) error { return d.unlink(name) }}))
	}
	return out
}

// ownLogDir reports whether a log in <podDir>/<ctr> belongs to container
// c, by what the runtime and the plan say of it: the pod directory names
// its pod's UID (and namespace and name, when the plan has them), the
// container directory its name.
func ownLogDir(podDir, ctr string, c model.Container, rm model.ContainerRemoval) bool {
	if c.PodUID != "" && model.PodUIDFromLogDir(podDir) != c.PodUID || c.Name != "" && ctr != c.Name {
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

// linksDir returns the pass's handle on dir, the /var/log/containers
// directory, opened (openLogDir: from "/", no symlink followed, every
// directory on the way trusted) at the first container that needs it and
// held until the pass ends (closeLinksDir). Opening it for each container
// walked the path again, four opens and four stats a container: the
// handle it gave was the same, since no one but root can change a
// directory openLogDir trusts. A failed open is not kept: the next
// container tries again.
func (x *executor) linksDir(dir string) (*logDir, error) {
	x.linksMu.Lock()
	defer x.linksMu.Unlock()
	if x.links != nil {
		return x.links, nil
	}
	d, err := openLogDir(dir)
	if err != nil {
		return nil, err
	}
	x.links = d
	return d, nil
}

// closeLinksDir closes the links directory's handle once no worker is
// left.
func (x *executor) closeLinksDir() {
	x.linksMu.Lock()
	defer x.linksMu.Unlock()
	if x.links != nil {
		x.links.close()
		x.links = nil
	}
}

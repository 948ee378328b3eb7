package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/rules"
	"golang.org/x/sys/unix"
)

// recheck re-checks one log path: a pod log directory
// directly inside the pod logs directory, or a symlink directly inside
// /var/log/containers, reached from the directory's handle without
// following symlinks. A pod directory whose pod runs a container again, a
// symlink whose target exists or whose container has not exited, is
// skipped.
func (rm logCheck) recheck(x *executor, _ *model.JournalEntry) checked {
	it := model.ItemResult{Kind: model.ItemLog, ID: rm.Path, Reason: rm.Reason}
	podDir, linkDir := x.d.PodLogsDir, x.d.LinksDir
	// Only direct children: a nested path could pass through a symlinked
	// subdirectory to anywhere on the node.
	parent, name := filepath.Dir(rm.Path), filepath.Base(rm.Path)
	inPods := rules.WithinDir(podDir, rm.Path) && parent == filepath.Clean(podDir)
	inLinks := rules.WithinDir(linkDir, rm.Path) && parent == filepath.Clean(linkDir)
	if !inPods && !inLinks {
		return checked{it: skipped(it, fmt.Sprintf("not directly inside %s or %s", podDir, linkDir))}
	}
	d, err := openLogDir(parent)
	if err != nil {
		return checked{it: recheckFailed(it, notFound(err))}
	}
	defer d.close()
	st, err := d.lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		it.Outcome = model.OutcomeGone
		return checked{it: it}
	}
	if err != nil {
		return checked{it: recheckFailed(it, err)}
	}
	v, err := x.views.all.fresh(false)
	if err != nil {
		return checked{it: viewFailed(it, err)}
	}
	if inLinks {
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return checked{it: skipped(it, "not a symlink")}
		}
		if d.exists(name) {
			return checked{it: skipped(it, "its target exists")}
		}
		if c, ok := v.container(rules.ContainerIDFromLink(rm.Path)); ok && c.State != model.ContainerExited {
			return checked{it: skipped(it, "its container has not exited")}
		}
		return x.removeIn(it, "remove log symlink", d.unlink, name)
	}
	uid := model.PodUIDFromLogDir(name)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || uid == "" {
		return checked{it: skipped(it, "not a pod log directory")}
	}
	for _, c := range v.podContainers(uid) {
		if !rules.IsDead(c.State) {
			return checked{it: skipped(it, fmt.Sprintf("pod runs container %s again", c.Name))}
		}
	}
	return x.removeIn(it, "remove pod log directory", d.removeAll, name)
}

// removeIn removes name through remove, a method of the directory handle
// the re-check used, while it is still open: the removal cannot be led
// elsewhere by a symlink swapped in meanwhile.
func (x *executor) removeIn(it model.ItemResult, what string, remove func(string) error, name string) checked {
	it, _ = x.journal.send(x.calls, it, &removal{what: what, call: func(context.Context) error { return remove(name) }})
	return checked{it: it}
}

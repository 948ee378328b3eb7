package rules

import (
	"path/filepath"
	"strings"

	"github.com/nodegc/nodegc/engine/model"
)

// planLogGC is the kubelet's log GC (evictPodLogsDirectories in
// pkg/kubelet/kuberuntime/kuberuntime_gc.go) as a pure function over the
// log files the snapshot lists (nothing when s.Logs is nil):
//   - the pod log directories <namespace>_<name>_<uid> in podLogsDir of
//     removable pods (ready pod source) that have no running container;
//   - the dangling /var/log/containers/*.log symlinks (their target is
//     gone) whose container is gone, is removed by this pass (it is not
//     among survivors) or has exited;
//   - after them, the symlinks that a pod directory's removal leaves
//     dangling, by the same container rule: the kubelet's pass removes the
//     pod directories first, then globs the links and stats each, so a
//     link into a directory it just removed goes in the same pass.
//
// podLogsDir is the policy's (default /var/log/pods when empty); when the
// snapshot scanned a different directory, no pod directory is planned.
//
// Safety: log paths come from the runtime and the filesystem and can be
// empty, relative or hostile. The kubelet v1.36.3 does not guard this, and
// collecting a container with a relative log path made it delete files in
// its own working directory. Only absolute, cleaned paths strictly inside
// podLogsDir (one level: a pod directory) or /var/log/containers (one
// level: a *.log link) are ever planned.
func planLogGC(s model.Snapshot, survivors []model.Container, podLogsDir string) model.LogPlan {
	return planLogs(s, survivors, podLogsDir, linkDir(s.Logs), removablePods(s))
}

// planLogs is planLogGC with the symlink directory and the removable pods
// given. As the kubelet does, it plans the pod directories first, then
// the links; the links that only the directories' removal leaves
// dangling come last.
func planLogs(s model.Snapshot, survivors []model.Container, podLogsDir, containerLogsDir string, removable map[string]bool) model.LogPlan {
	if s.Logs == nil {
		return model.LogPlan{Remove: []model.LogRemoval{}}
	}
	g := &logPass{plan: model.LogPlan{Remove: []model.LogRemoval{}}, emitted: make(map[string]bool), removedDirs: make(map[string]bool)}
	if podLogsDir == "" {
		podLogsDir = model.DefaultPodLogsDir
	}
	base, baseOK := cleanDir(podLogsDir)
	if scanned := s.Logs.PodLogsDir; scanned != "" && filepath.Clean(scanned) != base {
		baseOK = false
	}
	if baseOK && len(removable) > 0 {
		g.removePodDirs(s.Logs.PodDirs, base, survivors, removable)
	}
	if linkDir, ok := cleanDir(containerLogsDir); ok {
		g.removeLinks(s.Logs.ContainerLinks, linkDir, base, survivors)
	}
	g.plan.Remove = append(g.plan.Remove, g.afterDirs...)
	return g.plan
}

// logPass is one log plan being built.
type logPass struct {
	plan model.LogPlan
	// emitted holds every path planned, so that none is planned twice.
	emitted map[string]bool
	// afterDirs are the links into the pod directories removed, planned
	// after everything else.
	afterDirs []model.LogRemoval
	// removedDirs holds the names of the pod directories planned.
	removedDirs map[string]bool
}

// emit plans the removal of path once; a link that a pod directory's
// removal leaves dangling waits in afterDirs.
func (g *logPass) emit(path, reason string) {
	if g.emitted[path] {
		return
	}
	g.emitted[path] = true
	r := model.LogRemoval{Path: path, Reason: reason}
	if reason == model.LogPodDirRemoved {
		g.afterDirs = append(g.afterDirs, r)
	} else {
		g.plan.Remove = append(g.plan.Remove, r)
	}
}

// removePodDirs plans the directories under base of the removable pods
// that have no running container among the survivors: the kubelet's
// evictPodLogsDirectories, first part.
func (g *logPass) removePodDirs(dirs []string, base string, survivors []model.Container, removable map[string]bool) {
	running := make(map[string]bool)
	for _, c := range survivors {
		if !IsDead(c.State) {
			running[c.PodUID] = true
		}
	}
	for _, name := range dirs {
		uid := model.PodUIDFromLogDir(name)
		if uid == "" || !removable[uid] || running[uid] {
			continue
		}
		if p, ok := childPath(base, name); ok {
			g.emit(p, model.LogPodRemovable)
			g.removedDirs[name] = true
		}
	}
}

// removeLinks plans the links in linkDir that dangle, or will once the
// planned pod directories (under base) are gone, and whose container is
// gone or has exited: the kubelet's evictPodLogsDirectories, second part.
func (g *logPass) removeLinks(links []model.LogLink, linkDir, base string, survivors []model.Container) {
	state := make(map[string]model.ContainerState, len(survivors))
	for _, c := range survivors {
		state[c.ID] = c.State
	}
	for _, l := range links {
		p, ok := linkPath(linkDir, l.Path)
		if !ok {
			continue
		}
		reason := model.LogDangling
		if !l.Dangling {
			if !g.removedDirs[podDirOf(base, l.Target)] {
				continue // its log is still there: not the kubelet's to remove
			}
			reason = model.LogPodDirRemoved
		}
		id := l.ContainerID
		if id == "" {
			id = ContainerIDFromLink(p)
		}
		if id == "" {
			continue // cannot tie it to a container: leave it alone
		}
		// The kubelet keeps the link of a container that has not
		// exited (its log may be mid-rotation).
		if st, alive := state[id]; alive && st != model.ContainerExited {
			continue
		}
		g.emit(p, reason)
	}
}

// podDirOf is the name of the pod directory under base that an absolute
// link target lies in, or "" when it lies in none.
func podDirOf(base, target string) string {
	if base == "" || !filepath.IsAbs(target) || !WithinDir(base, filepath.Clean(target)) {
		return ""
	}
	rel, _ := filepath.Rel(base, filepath.Clean(target))
	dir, _, _ := strings.Cut(rel, "/")
	return dir
}

// ContainerIDFromLink takes the container ID from a link named
// <pod>_<namespace>_<container>-<id>.log, as the kubelet's
// getContainerIDFromLegacyLogSymlink does.
func ContainerIDFromLink(path string) string {
	name := strings.TrimSuffix(filepath.Base(path), ".log")
	i := strings.LastIndexByte(name, '-')
	if i < 0 || i == len(name)-1 {
		return ""
	}
	return name[i+1:]
}

// cleanDir returns the cleaned directory and whether it is absolute and
// not the root (a root would make "inside" mean everything).
func cleanDir(dir string) (string, bool) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", false
	}
	d := filepath.Clean(dir)
	return d, d != "/"
}

// childPath joins base and a directory entry name and reports whether the
// result is a direct child of base: the name must be one plain path
// element (no separator, not "." or "..").
func childPath(base, name string) (string, bool) {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || strings.ContainsRune(name, 0) {
		return "", false
	}
	p := filepath.Join(base, name)
	return p, filepath.Dir(p) == base
}

// linkPath cleans a symlink path and reports whether it is an absolute
// path directly inside dir, named *.log.
func linkPath(dir, path string) (string, bool) {
	if path == "" || !filepath.IsAbs(path) || strings.ContainsRune(path, 0) {
		return "", false
	}
	p := filepath.Clean(path)
	if filepath.Dir(p) != dir || !strings.HasSuffix(p, ".log") || filepath.Base(p) == ".log" {
		return "", false
	}
	return p, true
}

// linkDir is the directory of the /var/log/containers symlinks the
// snapshot scanned: its override when it is absolute and not "/", else the
// kubelet's.
func linkDir(l *model.LogFiles) string {
	if l != nil && filepath.IsAbs(l.ContainerLogsDir) && filepath.Clean(l.ContainerLogsDir) != "/" {
		return filepath.Clean(l.ContainerLogsDir)
	}
	return model.ContainerLogsDir
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

package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/rules"
	"golang.org/x/sys/unix"
)

// logDir is a directory log GC removes from, held open: every name in it
// is looked up, opened and unlinked relative to its handle, never through
// a path, and no symlink is ever followed. A directory swapped for a
// symlink between a check and a removal is refused by the open, and an
// unlink removes a name in this directory only, never what a link points
// to.
type logDir struct {
	fd   int
	path string // for messages
}

// openLogDir opens dir, an absolute path, one component at a time from
// "/" with O_NOFOLLOW, and checks each directory on the way (see
// trustedDir). A missing directory wraps os.ErrNotExist.
func openLogDir(dir string) (*logDir, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s: not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /: %w", err)
	}
	d := &logDir{fd: fd, path: "/"}
	for _, name := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if name == "" {
			continue
		}
		if err := d.trusted(true); err != nil {
			d.close()
			return nil, err
		}
		sub, err := d.sub(name)
		d.close()
		if err != nil {
			return nil, err
		}
		d = sub
	}
	if err := d.trusted(false); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// trusted checks the open directory: it must be owned by root (or by the
// user nodegc runs as, who could remove it anyway) and not writable by
// group or others, the rule sudo and systemd apply to what they trust.
// A directory above the one log GC removes from may instead be
// world-writable with the sticky bit, as /tmp is: there no one else can
// rename or remove an entry root owns.
func (d *logDir) trusted(above bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", d.path, err)
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not root", d.path, st.Uid)
	}
	if st.Mode&0o022 != 0 && !(above && st.Mode&unix.S_ISVTX != 0) {
		return fmt.Errorf("%s is writable by group or others (mode %04o)", d.path, st.Mode&0o7777)
	}
	return nil
}

// close releases the handle.
func (d *logDir) close() { unix.Close(d.fd) }

// sub opens the directory name inside d without following a symlink.
func (d *logDir) sub(name string) (*logDir, error) {
	if !plainName(name) {
		return nil, fmt.Errorf("%q is not a plain name", name)
	}
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	p := filepath.Join(d.path, name)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s is not a directory (a symlink is never followed)", p)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return &logDir{fd: fd, path: p}, nil
}

// lstat stats name inside d without following a symlink.
func (d *logDir) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if !plainName(name) {
		return st, fmt.Errorf("%q is not a plain name", name)
	}
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	return st, nil
}

// exists reports whether name inside d leads, through a symlink or not,
// to something that exists (a link's target is only looked at).
func (d *logDir) exists(name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.fd, name, &st, 0) == nil
}

// unlink removes the name (a file or a symlink, never a directory)
// inside d; a name already gone wraps ErrNotFound.
func (d *logDir) unlink(name string) error {
	if !plainName(name) {
		return fmt.Errorf("%q is not a plain name", name)
	}
	err := unix.Unlinkat(d.fd, name, 0)
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w", filepath.Join(d.path, name), model.ErrNotFound)
	}
	if err != nil {
		return &os.PathError{Op: "unlink", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// maxLogDepth bounds how deep removeAll descends. The kubelet's layout is
// two levels below a pod directory; a deeper tree is not its.
const maxLogDepth = 16

// removeAll removes the directory name inside d and everything in it,
// each entry unlinked relative to its own directory's handle: a symlink
// inside is removed, never followed, so its target survives. A name
// already gone wraps ErrNotFound.
func (d *logDir) removeAll(name string) error {
	err := d.removeTree(name, 0)
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w", filepath.Join(d.path, name), model.ErrNotFound)
	}
	return err
}

func (d *logDir) removeTree(name string, depth int) error {
	if depth > maxLogDepth {
		return fmt.Errorf("%s: deeper than %d levels: not the kubelet's layout", filepath.Join(d.path, name), maxLogDepth)
	}
	sub, err := d.sub(name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return unix.ENOENT
		}
		return err
	}
	names, err := sub.names()
	if err == nil {
		for _, n := range names {
			err = sub.unlink(n)
			if errors.Is(err, model.ErrNotFound) {
				err = nil
			}
			var pe *os.PathError
			if errors.As(err, &pe) && errors.Is(pe.Err, unix.EISDIR) {
				err = sub.removeTree(n, depth+1)
			}
			if err != nil {
				break
			}
		}
	}
	sub.close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return unix.ENOENT
		}
		return &os.PathError{Op: "rmdir", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// names lists d's entries.
func (d *logDir) names() ([]string, error) {
	fd, err := unix.Dup(d.fd)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, fmt.Errorf("read %s: %w", d.path, err)
	}
	return f.Readdirnames(-1)
}

// plainName reports whether name is one path element: not empty, not "."
// or "..", without a separator or a NUL.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// containerLogLayout splits a container's log path into the kubelet's
// layout under podLogsDir, <pod dir>/<container>/<N>.log
// (BuildContainerLogsDirectory and buildContainerLogsPath in
// pkg/kubelet/kuberuntime/helpers.go), and reports whether it is one: the
// pod directory is <namespace>_<name>_<uid>, the file a restart count
// followed by .log. Nothing else is a container log nodegc removes.
func containerLogLayout(podLogsDir, path string) (podDir, container, file string, ok bool) {
	if !rules.WithinDir(podLogsDir, path) {
		return "", "", "", false
	}
	rel, err := filepath.Rel(filepath.Clean(podLogsDir), path)
	if err != nil {
		return "", "", "", false
	}
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || model.PodUIDFromLogDir(parts[0]) == "" || !plainName(parts[1]) {
		return "", "", "", false
	}
	n, found := strings.CutSuffix(parts[2], ".log")
	if _, err := strconv.ParseUint(n, 10, 32); !found || err != nil {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// removeContainerLogFile removes a container's log file in the kubelet's
// layout, and its rotated copies (<N>.log.<time>, compressed or not),
// which the kubelet's containerLogManager.Clean removes with it
// (pkg/kubelet/logs/container_log_manager.go globs <log path>*). Every
// directory is opened from podLogsDir's handle without following a
// symlink, and only regular files are unlinked.
func removeContainerLogFile(podLogsDir, podDir, container, file string) error {
	root, err := openLogDir(podLogsDir)
	if err != nil {
		return notFound(err)
	}
	defer root.close()
	pd, err := root.sub(podDir)
	if err != nil {
		return notFound(err)
	}
	defer pd.close()
	cd, err := pd.sub(container)
	if err != nil {
		return notFound(err)
	}
	defer cd.close()
	names, err := cd.names()
	if err != nil {
		return err
	}
	var first error
	found := false
	for _, n := range names {
		if n != file && !strings.HasPrefix(n, file+".") {
			continue
		}
		if st, err := cd.lstat(n); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		err := cd.unlink(n)
		switch {
		case err == nil:
			found = found || n == file
		case !errors.Is(err, model.ErrNotFound) && first == nil:
			first = err
		}
	}
	if first == nil && !found {
		return fmt.Errorf("%s: %w", filepath.Join(cd.path, file), model.ErrNotFound)
	}
	return first
}

// notFound turns a missing directory into ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %v", model.ErrNotFound, err)
	}
	return err
}

// CheckPodLogsDirOnDisk checks the pod logs directory a deleting engine
// removes from: it and every directory above it, opened without following
// symlinks, must be owned by root (or by the user nodegc runs as) and not
// writable by group or others (a directory above may be sticky, as /tmp
// is). A directory anyone else could write to lets them plant what log GC
// then removes as root. A missing directory passes: there is nothing to
// collect.
func CheckPodLogsDirOnDisk(dir string) error {
	d, err := openLogDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	d.close()
	return nil
}

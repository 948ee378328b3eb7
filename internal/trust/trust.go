package trust

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds the symlinks Path follows, as the kernel's ELOOP does.
const maxLinks = 40

// UntrustedError says why a file is not trusted: Path is the file or the
// directory that failed the rule (not always the one asked about).
type UntrustedError struct {
	Path string
	Why  string
}

func (e *UntrustedError) Error() string { return e.Path + ": " + e.Why }

// Path returns nil when path may be believed: it is absolute, and it and
// every directory on the way to it, following symlinks component by
// component as the kernel resolves them, is owned by root and not writable
// by group or others. The one exception is a root-owned directory with the
// sticky bit (/tmp): others may create names in it, but only root may
// rename or remove root's, and what lies below is checked in turn. A
// symlink's own owner and mode do not matter (no one can change a link in
// place); the directory holding it does. Otherwise the error is an
// *UntrustedError naming the first path that fails, or the error that
// stopped the walk (a missing file, too many links).
func Path(path string) error {
	return walk(path, osFS{}, 0)
}

// PathFor is Path for a process running as uid: a directory or file on
// the way may be owned by root or by uid (no other user can change either),
// under the same rule otherwise. For uid 0 it is Path. Callers use it for
// a directory the process itself keeps its state in, which a non-root
// user's nodegc may keep below its own home.
func PathFor(path string, uid int) error {
	if uid < 0 {
		return &UntrustedError{Path: path, Why: fmt.Sprintf("uid %d is no user", uid)}
	}
	return walk(path, osFS{}, uint32(uid))
}

// Owner returns nil when fi is owned by root and not writable by group or
// others; otherwise an *UntrustedError for path. Callers use it where the
// path does not matter, only the file: /proc/PID/exe, stat'ed through the
// link, is the executable the process runs even if its name has changed.
func Owner(path string, fi fs.FileInfo) error {
	return owner(path, fi, 0)
}

// owner is Owner with uid trusted beside root.
func owner(path string, fi fs.FileInfo, uid uint32) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return &UntrustedError{Path: path, Why: "owner unknown"}
	case st.Uid != 0 && st.Uid != uid:
		if uid == 0 {
			return &UntrustedError{Path: path, Why: fmt.Sprintf("owned by uid %d, not root", st.Uid)}
		}
		return &UntrustedError{Path: path, Why: fmt.Sprintf("owned by uid %d, neither root nor uid %d", st.Uid, uid)}
	case fi.IsDir() && fi.Mode()&fs.ModeSticky != 0:
		return nil // see Path
	case fi.Mode()&0o002 != 0:
		return &UntrustedError{Path: path, Why: fmt.Sprintf("writable by others (mode %04o)", fi.Mode().Perm())}
	case fi.Mode()&0o020 != 0:
		return &UntrustedError{Path: path, Why: fmt.Sprintf("writable by group (mode %04o)", fi.Mode().Perm())}
	}
	return nil
}

// statFS is what the walk reads; a test gives it a fake tree.
type statFS interface {
	Lstat(path string) (fs.FileInfo, error)
	Readlink(path string) (string, error)
}

type osFS struct{}

func (osFS) Lstat(p string) (fs.FileInfo, error) { return os.Lstat(p) }
func (osFS) Readlink(p string) (string, error)   { return os.Readlink(p) }

// walk resolves path one component at a time from /, checking "/" and
// every directory or file it reaches with owner (root and uid trusted),
// and splicing each symlink's target into the components left (an
// absolute target restarts from /).
func walk(path string, fsys statFS, uid uint32) error {
	if !filepath.IsAbs(path) {
		return &UntrustedError{Path: path, Why: "not an absolute path"}
	}
	if err := check(fsys, "/", uid); err != nil {
		return err
	}
	cur, todo, links := "/", components(path), 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur is a real directory: its parent was checked on the way
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := fsys.Lstat(next)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if err := owner(next, fi, uid); err != nil {
				return err
			}
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return &fs.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
		}
		target, err := fsys.Readlink(next)
		if err != nil {
			return err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(components(target), todo...)
	}
	return nil
}

// check lstats p and applies owner.
func check(fsys statFS, p string, uid uint32) error {
	fi, err := fsys.Lstat(p)
	if err != nil {
		return err
	}
	return owner(p, fi, uid)
}

// components splits a path into its names, dropping empty ones.
func components(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

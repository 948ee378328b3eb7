package trust

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// node is one entry of a fake tree: its owner, its mode (type and
// permissions), and a symlink's target.
type node struct {
	uid    uint32
	mode   fs.FileMode
	target string
}

// fakeFS is a tree of nodes by absolute path.
type fakeFS map[string]node

func (f fakeFS) Lstat(p string) (fs.FileInfo, error) {
	n, ok := f[p]
	if !ok {
		return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return fakeInfo{name: filepath.Base(p), n: n}, nil
}

func (f fakeFS) Readlink(p string) (string, error) { return f[p].target, nil }

type fakeInfo struct {
	name string
	n    node
}

func (i fakeInfo) Name() string       { return i.name }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return i.n.mode }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return i.n.mode.IsDir() }
func (i fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: i.n.uid} }

// Builders for the tree's nodes.
func rootDir(perm fs.FileMode) node  { return node{mode: fs.ModeDir | perm} }
func userDir(perm fs.FileMode) node  { return node{uid: 65534, mode: fs.ModeDir | perm} }
func rootFile(perm fs.FileMode) node { return node{mode: perm} }
func userFile(perm fs.FileMode) node { return node{uid: 65534, mode: perm} }
func link(target string) node        { return node{uid: 65534, mode: fs.ModeSymlink | 0o777, target: target} }
func sticky(uid uint32, perm fs.FileMode) node {
	return node{uid: uid, mode: fs.ModeDir | fs.ModeSticky | perm}
}

// tree is a node with the usual trusted system directories under it.
func tree(extra fakeFS) fakeFS {
	t := fakeFS{
		"/":                      rootDir(0o755),
		"/etc":                   rootDir(0o755),
		"/etc/kubernetes":        rootDir(0o755),
		"/etc/kubernetes/k.conf": rootFile(0o600),
		"/usr":                   rootDir(0o755),
		"/usr/bin":               rootDir(0o755),
		"/bin":                   node{mode: fs.ModeSymlink | 0o777, target: "usr/bin"},
		"/usr/bin/plugin":        rootFile(0o755),
		"/tmp":                   sticky(0, 0o777),
		"/home":                  rootDir(0o755),
		"/home/eve":              userDir(0o755),
		"/home/eve/k.conf":       userFile(0o644),
	}
	for p, n := range extra {
		t[p] = n
	}
	return t
}

func TestPath(t *testing.T) {
	tests := []struct {
		name string
		fs   fakeFS
		path string
		// bad is the path the error names; "" means trusted.
		bad string
		// why is in the error.
		why string
	}{
		{name: "a root-owned 0600 file in root-owned 0755 directories is trusted", fs: tree(nil), path: "/etc/kubernetes/k.conf"},
		{name: "a root-owned directory is trusted like a file", fs: tree(nil), path: "/etc/kubernetes"},
		{name: "a file owned by another user is not", fs: tree(nil), path: "/home/eve/k.conf", bad: "/home/eve", why: "owned by uid 65534, not root"},
		{
			name: "a root-owned file in a directory another user owns is not: they can replace it",
			fs:   tree(fakeFS{"/home/eve/root.conf": rootFile(0o600)}),
			path: "/home/eve/root.conf", bad: "/home/eve", why: "owned by uid 65534",
		},
		{
			name: "a group-writable file is not",
			fs:   tree(fakeFS{"/etc/kubernetes/g.conf": rootFile(0o660)}),
			path: "/etc/kubernetes/g.conf", bad: "/etc/kubernetes/g.conf", why: "writable by group (mode 0660)",
		},
		{
			name: "an other-writable file is not",
			fs:   tree(fakeFS{"/etc/kubernetes/o.conf": rootFile(0o646)}),
			path: "/etc/kubernetes/o.conf", bad: "/etc/kubernetes/o.conf", why: "writable by others (mode 0646)",
		},
		{
			name: "a group-writable parent directory is not, however the file is kept",
			fs:   tree(fakeFS{"/etc/kubernetes": rootDir(0o775)}),
			path: "/etc/kubernetes/k.conf", bad: "/etc/kubernetes", why: "writable by group",
		},
		{
			name: "an other-writable / is not",
			fs:   tree(fakeFS{"/": rootDir(0o757)}),
			path: "/etc/kubernetes/k.conf", bad: "/", why: "writable by others",
		},
		{
			name: "a root-owned sticky directory (/tmp) is passed through: only root can rename root's names in it",
			fs:   tree(fakeFS{"/tmp/d": rootDir(0o700), "/tmp/d/k.conf": rootFile(0o600)}),
			path: "/tmp/d/k.conf",
		},
		{
			name: "a name another user made in /tmp is not",
			fs:   tree(fakeFS{"/tmp/d": userDir(0o700), "/tmp/d/k.conf": rootFile(0o600)}),
			path: "/tmp/d/k.conf", bad: "/tmp/d", why: "owned by uid 65534",
		},
		{
			name: "a sticky directory another user owns is not",
			fs:   tree(fakeFS{"/tmp/s": sticky(65534, 0o1777), "/tmp/s/k.conf": rootFile(0o600)}),
			path: "/tmp/s/k.conf", bad: "/tmp/s", why: "owned by uid 65534",
		},
		{
			name: "a symlink in a trusted directory is followed, and its target checked: root's /bin -> usr/bin",
			fs:   tree(nil),
			path: "/bin/plugin",
		},
		{
			name: "a symlink in a trusted directory to a file another user owns is not trusted",
			fs:   tree(fakeFS{"/etc/kubernetes/l.conf": link("/home/eve/k.conf")}),
			path: "/etc/kubernetes/l.conf", bad: "/home/eve", why: "owned by uid 65534",
		},
		{
			name: "a chain of links is checked at every hop: a relative link through another user's directory is not trusted",
			fs: tree(fakeFS{
				"/etc/kubernetes/l.conf": link("../../home/eve/hop"),
				"/home/eve/hop":          link("/etc/kubernetes/k.conf"),
			}),
			path: "/etc/kubernetes/l.conf", bad: "/home/eve", why: "owned by uid 65534",
		},
		{
			name: ".. is resolved against the real directory, not the name",
			fs:   tree(fakeFS{"/etc/kubernetes/up": link("/home/eve")}),
			path: "/etc/kubernetes/up/../k.conf", bad: "/home/eve", why: "owned by uid 65534",
		},
		{name: "a relative path is not trusted: it depends on a working directory", fs: tree(nil), path: "etc/kubernetes/k.conf", bad: "etc/kubernetes/k.conf", why: "not an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := walk(tt.path, tt.fs, 0)
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("walk(%s) = %v, want trusted", tt.path, err)
				}
				return
			}
			var ue *UntrustedError
			if !errors.As(err, &ue) || ue.Path != tt.bad || !strings.Contains(ue.Why, tt.why) {
				t.Fatalf("walk(%s) = %v, want %s: …%s…", tt.path, err, tt.bad, tt.why)
			}
		})
	}

	t.Run("a missing file is an error, not trust", func(t *testing.T) {
		if err := walk("/etc/kubernetes/none.conf", tree(nil), 0); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want not exist", err)
		}
	})
	t.Run("a symlink loop ends with ELOOP", func(t *testing.T) {
		f := tree(fakeFS{"/etc/a": link("/etc/b"), "/etc/b": link("/etc/a")})
		if err := walk("/etc/a", f, 0); !errors.Is(err, syscall.ELOOP) {
			t.Errorf("err = %v, want ELOOP", err)
		}
	})
}

// TestPathFor: a process running as a user trusts, beside root's, the
// directories that user owns, under the same rule; another user's never.
func TestPathFor(t *testing.T) {
	const eve = 65534
	tests := []struct {
		name     string
		fs       fakeFS
		path     string
		uid      uint32
		bad, why string
	}{
		{name: "root's own directories are trusted by any user", fs: tree(nil), path: "/etc/kubernetes", uid: eve},
		{name: "a user's own directory is trusted by that user", fs: tree(nil), path: "/home/eve", uid: eve},
		{name: "a user's own directory is not trusted by root", fs: tree(nil), path: "/home/eve", uid: 0, bad: "/home/eve", why: "owned by uid 65534, not root"},
		{name: "another user's directory is not trusted", fs: tree(nil), path: "/home/eve", uid: 1000, bad: "/home/eve", why: "owned by uid 65534, neither root nor uid 1000"},
		{
			name: "a user's own directory others can write is not trusted by that user",
			fs:   tree(fakeFS{"/home/eve/shared": userDir(0o777)}),
			path: "/home/eve/shared", uid: eve, bad: "/home/eve/shared", why: "writable by others",
		},
		{
			name: "a root-owned sticky directory is passed through for any user",
			fs:   tree(fakeFS{"/tmp/eve": userDir(0o700)}),
			path: "/tmp/eve", uid: eve,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := walk(tt.path, tt.fs, tt.uid)
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("walk(%s, uid %d) = %v, want trusted", tt.path, tt.uid, err)
				}
				return
			}
			var ue *UntrustedError
			if !errors.As(err, &ue) || ue.Path != tt.bad || !strings.Contains(ue.Why, tt.why) {
				t.Fatalf("walk(%s, uid %d) = %v, want %s: …%s…", tt.path, tt.uid, err, tt.bad, tt.why)
			}
		})
	}
}

// TestPathOnDisk checks the real filesystem's walk as root: a file root
// made in a temp dir is trusted, and made writable by others, or given to
// another user, it is not.
func TestPathOnDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("files owned by root need root")
	}
	p := filepath.Join(t.TempDir(), "k.conf")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Path(p); err != nil {
		t.Fatalf("Path(%s) = %v, want trusted", p, err)
	}
	os.Chmod(p, 0o606)
	if err := Path(p); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("0606: Path = %v", err)
	}
	os.Chmod(p, 0o600)
	os.Chown(p, 65534, 65534)
	if err := Path(p); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("uid 65534: Path = %v", err)
	}
}

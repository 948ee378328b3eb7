package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine/state"
)

// nobodyUID is the uid of the user who plants, in these tests.
const nobodyUID = 65534

// TestStateDirAboveMustBeRootsAlone: a process that can delete refuses a
// state dir below a directory that another user can change (own, or write
// through group or others), through a symlink too, before it creates or
// writes anything: that user could swap the checked state dir for a link
// to a directory of root's. Root's own directories and a root-owned
// sticky one (/tmp) above it are fine.
func TestStateDirAboveMustBeRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("another user's directory needs root to make")
	}
	for _, tt := range []struct {
		name string
		// setup makes the tree under base and returns the state dir and
		// the directory the refusal must name ("" when none).
		setup func(t *testing.T, base string) (sdir, bad string)
		why   string
	}{
		{
			name: "a state dir in another user's directory is refused, naming it",
			setup: func(t *testing.T, base string) (string, string) {
				u := mkdirOwned(t, base, "u", 0o755, nobodyUID)
				return filepath.Join(u, "state"), u
			},
			why: "owned by uid 65534",
		},
		{
			name: "an existing state dir of root's in another user's directory is refused: the user can rename it",
			setup: func(t *testing.T, base string) (string, string) {
				u := mkdirOwned(t, base, "u", 0o755, nobodyUID)
				return mkdirOwned(t, u, "state", 0o700, 0), u
			},
			why: "owned by uid 65534",
		},
		{
			name: "a state dir to be created below another user's directory is refused before anything is created",
			setup: func(t *testing.T, base string) (string, string) {
				u := mkdirOwned(t, base, "u", 0o755, nobodyUID)
				return filepath.Join(u, "a", "b", "state"), u
			},
			why: "owned by uid 65534",
		},
		{
			name: "a state dir reached through a symlink to another user's directory is refused, naming that directory",
			setup: func(t *testing.T, base string) (string, string) {
				u := mkdirOwned(t, base, "u", 0o755, nobodyUID)
				r := mkdirOwned(t, base, "r", 0o755, 0)
				if err := os.Symlink(u, filepath.Join(r, "link")); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(r, "link", "state"), u
			},
			why: "owned by uid 65534",
		},
		{
			name: "a state dir in a root directory its group can write is refused",
			setup: func(t *testing.T, base string) (string, string) {
				g := mkdirOwned(t, base, "g", 0o775, 0)
				return filepath.Join(g, "state"), g
			},
			why: "writable by group",
		},
		{
			name: "a state dir below root's directories and a root-owned sticky one is used",
			setup: func(t *testing.T, base string) (string, string) {
				s := mkdirOwned(t, base, "sticky", os.ModeSticky|0o777, 0)
				r := mkdirOwned(t, s, "r", 0o755, 0)
				return filepath.Join(r, "state"), ""
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			sdir, bad := tt.setup(t, base)
			var missing []string // below the refused directory, before the check
			for p := sdir; p != bad && p != filepath.Dir(p); p = filepath.Dir(p) {
				if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
					missing = append(missing, p)
				}
			}
			err := CheckStateDir(sdir)
			var se *StateDirError
			if bad == "" {
				if err != nil {
					t.Fatalf("CheckStateDir(%s) = %v, want it used", sdir, err)
				}
				return
			}
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "--state-dir: "+sdir+" is below a directory another user can change ("+bad+": "+tt.why) {
				t.Fatalf("CheckStateDir(%s) = %v, want a --state-dir error naming %s: %s", sdir, err, bad, tt.why)
			}
			for _, p := range missing {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was created (%v) though the state dir was refused", p, err)
				}
			}
			// The engine that can delete refuses it the same way, and no
			// file of the state dir is written there.
			rt := newFakeRuntime()
			if e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: sdir}); !errors.As(err, &se) {
				if e != nil {
					e.Close()
				}
				t.Fatalf("New = %v, want a *StateDirError", err)
			}
			if err := SaveSandboxImages(sdir, map[string]string{"s": "i"}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{state.RecordsFile, state.JournalFile, state.LockFile, sandboxImagesFile} {
				if _, err := os.Lstat(filepath.Join(sdir, name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was written (%v) in a refused state dir", name, err)
				}
			}
		})
	}
}

// mkdirOwned makes dir/name with mode perm (the umask aside), owned by uid, and
// returns its path.
func mkdirOwned(t *testing.T, dir, name string, perm os.FileMode, uid int) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
	return p
}

// endpointRuntime is the fake runtime at an endpoint, as the CRI client
// names its own.
type endpointRuntime struct {
	*fakeRuntime
	endpoint string
}

func (r endpointRuntime) Endpoint() string { return r.endpoint }

// TestOneEnginePerRuntime: an engine that can remove locks its runtime,
// whatever its state dir: a second one on the same runtime (the socket by
// another name too) is refused, naming the first's pid and state dir,
// until the first closes; engines on other runtimes are not held back.
func TestOneEnginePerRuntime(t *testing.T) {
	locks := filepath.Join(t.TempDir(), "locks")
	t.Setenv(RuntimeLockDirEnv, locks)
	sockets := t.TempDir()
	sock := filepath.Join(sockets, "runtime.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil { // the lock needs only its path
		t.Fatal(err)
	}
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(sockets, alias); err != nil {
		t.Fatal(err)
	}
	open := func(endpoint, state string) (*Engine, error) {
		rt := newFakeRuntime()
		return New(Options{Reader: rt, Statfs: rt.Statfs, Remover: endpointRuntime{rt, endpoint}, Policy: DefaultPolicy(), StateDir: state})
	}
	firstState := filepath.Join(t.TempDir(), "first")
	first, err := open("unix://"+sock, firstState)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })
	for _, tt := range []struct {
		name, endpoint string
		sameState      bool
		want           error
	}{
		{name: "a second engine with a state dir of its own on the same runtime is refused, naming the first", endpoint: "unix://" + sock, want: ErrRuntimeBusy},
		{name: "the same socket through a symlinked directory is the same runtime", endpoint: "unix://" + filepath.Join(alias, "runtime.sock"), want: ErrRuntimeBusy},
		{name: "the same socket given as a bare path is the same runtime", endpoint: sock, want: ErrRuntimeBusy},
		{name: "a second engine on the same state dir is refused by the state dir's lock", endpoint: "unix://" + sock, sameState: true, want: ErrStateDirBusy},
		{name: "an engine on another runtime is not held back", endpoint: "unix://" + filepath.Join(sockets, "other.sock")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "second")
			if tt.sameState {
				state = firstState
			}
			e, err := open(tt.endpoint, state)
			if e != nil {
				defer e.Close()
			}
			var se *StateDirError
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("New = %v, want an engine", err)
			case tt.want == nil:
			case !errors.Is(err, tt.want) || !errors.As(err, &se):
				t.Fatalf("New = %v, want a *StateDirError wrapping %v", err, tt.want)
			case tt.want == ErrRuntimeBusy && !strings.Contains(err.Error(), fmt.Sprintf("another nodegc (pid %d, state dir %s) is removing from the runtime %s", os.Getpid(), firstState, tt.endpoint)):
				t.Errorf("error %q: want it to name the first engine's pid and state dir, and the runtime", err)
			}
		})
	}
	t.Run("once the first engine closes, a second one on its runtime opens", func(t *testing.T) {
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		e, err := open("unix://"+sock, filepath.Join(t.TempDir(), "second"))
		if err != nil {
			t.Fatalf("New = %v, want an engine", err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if names, err := os.ReadDir(locks); err != nil || len(names) != 0 {
			t.Errorf("lock dir holds %v (%v) with no engine open, want it empty", names, err)
		}
	})
}

// TestAStateDirIsNotCreatedWithItsParents pins issue 41: a mistyped
// --state-dir /x/a/b is refused, naming the missing parent, and nothing
// is created; a missing state dir whose parent exists is created 0700.
func TestAStateDirIsNotCreatedWithItsParents(t *testing.T) {
	base := t.TempDir()
	sdir := filepath.Join(base, "x", "a", "b")
	rt := newFakeRuntime()
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: sdir})
	var se *StateDirError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "its parent "+filepath.Join(base, "x", "a")+" does not exist") {
		if e != nil {
			e.Close()
		}
		t.Fatalf("New = %v, want a state dir error naming the missing parent", err)
	}
	if _, err := os.Lstat(filepath.Join(base, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (%v)", filepath.Join(base, "x"), err)
	}
	one := filepath.Join(base, "new")
	e, err = New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), StateDir: one})
	if err != nil {
		t.Fatalf("a missing state dir whose parent exists: %v", err)
	}
	e.Close()
	if fi, err := os.Lstat(one); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir %v, %v; want it created 0700", fi, err)
	}
}

// TestCheckStateDirLeavesNothing pins issue 41: the check before a command
// connects made a missing state dir and a lock in it, left behind when the
// runtime then could not be reached. It leaves what it found: no dir it
// made, no lock it made, and a lock that was there stays.
func TestCheckStateDirLeavesNothing(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new")
	if err := CheckStateDir(fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the new dir %s was left behind (%v)", fresh, err)
	}
	empty := t.TempDir()
	if err := os.Chmod(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateDir(empty); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the check wrote %v in an empty state dir", entries)
	}
	lock := filepath.Join(empty, "lock")
	if err := os.WriteFile(lock, []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateDir(empty); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Errorf("the lock that was there is gone: %v", err)
	}
}

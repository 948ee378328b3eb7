package realnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Runtime is one containerd release the harness can run. The real suite runs
// once per row of Runtimes, so what nodegc does is checked against the
// containerd Debian ships (1.6) and the one current Kubernetes releases need
// (2.x), whose CRI plugin differs: it pins the sandbox image, and its config
// has another layout.
type Runtime struct {
	// Name names the runtime in subtest names and on the command line
	// (nodegc-sandbox -runtime).
	Name string
	// Version is the release line, "1.6" or "2.2": the version CRI reports
	// must start with it, which proves the node runs what it says.
	Version string
	// BinDir holds the runtime's containerd, containerd-shim-runc-v2 and
	// ctr. Empty means those on PATH (Debian's containerd package). runc is
	// always Debian's.
	BinDir string
}

// Containerd2Version is the containerd 2 release the harness runs, built from
// source by scripts/build-containerd2.sh.
const Containerd2Version = "v2.2.1"

// CacheEnv names the environment variable holding the cache directory that
// scripts/build-containerd2.sh builds containerd 2 into; unset means
// DefaultCache.
const CacheEnv = "NODEGC_CACHE"

// DefaultCache is the build cache when CacheEnv is unset.
const DefaultCache = "/var/cache/nodegc"

// Containerd16 is Debian 12's containerd package (1.6.20) with its shim and
// ctr, found on PATH and installed with apt-get when missing. It is the zero
// Options.Runtime.
var Containerd16 = Runtime{Name: "containerd-1.6", Version: "1.6"}

// Containerd2 is containerd Containerd2Version built from source into the
// cache (scripts/build-containerd2.sh, run by make deps).
func Containerd2() Runtime {
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		cache = DefaultCache
	}
	return Runtime{
		Name:    "containerd-2.2",
		Version: "2.2",
		BinDir:  filepath.Join(cache, "containerd-"+Containerd2Version, "bin"),
	}
}

// Runtimes is the table of runtimes the real suite runs on, oldest first.
// CI runs every test of test/integration on each, and a runtime it cannot
// run there is a failure (RequireEnv).
func Runtimes() []Runtime {
	return []Runtime{Containerd16, Containerd2()}
}

// RuntimeNamed returns the runtime of Runtimes with that name. The short
// names containerd1 and containerd2 (make sandbox RUNTIME=containerd2) work
// too.
func RuntimeNamed(name string) (Runtime, error) {
	switch name {
	case "containerd1", "containerd-1":
		name = Containerd16.Name
	case "containerd2", "containerd-2":
		name = Containerd2().Name
	}
	var names []string
	for _, r := range Runtimes() {
		if r.Name == name {
			return r, nil
		}
		names = append(names, r.Name)
	}
	return Runtime{}, fmt.Errorf("runtime %q: want one of %s, containerd1 or containerd2", name, strings.Join(names, ", "))
}

// Major is the runtime's major version: 1 reads a version 2 config, 2 a
// version 3 one.
func (r Runtime) Major() int {
	if strings.HasPrefix(r.Version, "1.") {
		return 1
	}
	return 2
}

// PinsSandboxImage reports whether the runtime's CRI plugin lists its
// sandbox image as pinned. containerd 1.7 started pinning it; 1.6 does not,
// which is why nodegc learns the sandbox image from the runtime's config too.
func (r Runtime) PinsSandboxImage() bool { return r.Major() >= 2 }

// String returns the runtime's name.
func (r Runtime) String() string { return r.Name }

// runtimeTools are the programs a runtime brings; runc comes from Debian.
var runtimeTools = []string{"containerd", "containerd-shim-runc-v2", "ctr"}

// check reports why the runtime's own binaries are missing, wrapping
// ErrUnavailable. Debian's runtime is checked by ensureTools.
func (r Runtime) check() error {
	if r.BinDir == "" {
		return nil
	}
	for _, t := range runtimeTools {
		p := filepath.Join(r.BinDir, t)
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%w: %s has no %s (build it with scripts/build-containerd2.sh, which make deps runs)", ErrUnavailable, r.BinDir, t)
		}
	}
	return nil
}

// systemTools are the programs the runtime needs from the system (Debian's
// packages): all of them for Debian's containerd, only runc for a runtime
// with binaries of its own.
func (r Runtime) systemTools() []string {
	if r.BinDir == "" {
		return append(slices.Clone(runtimeTools), "runc")
	}
	return []string{"runc"}
}

// path is the PATH the runtime's processes get: its own binaries first, so
// containerd 2 starts its own shim even when Debian's 1.6 shim is installed,
// then PATH with the sbin directories.
func (r Runtime) path() string {
	if r.BinDir == "" {
		return toolPath()
	}
	return r.BinDir + string(filepath.ListSeparator) + toolPath()
}

// look finds one of the runtime's programs on its path.
func (r Runtime) look(name string) (string, error) {
	for _, d := range filepath.SplitList(r.path()) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

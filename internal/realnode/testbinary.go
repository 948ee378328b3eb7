package realnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// testBinary returns the static nodegc-testbin, building it once per node
// into Dir/bin unless Options.TestBinary names one.
func (n *Node) testBinary() (string, error) {
	n.binOnce.Do(func() {
		if n.o.TestBinary != "" {
			n.bin = n.o.TestBinary
			return
		}
		n.bin, n.binErr = BuildTestBinary(filepath.Join(n.dir, "bin", "nodegc-testbin"))
	})
	return n.bin, n.binErr
}

// BuildTestBinary builds nodegc-testbin statically (CGO_ENABLED=0, stripped)
// to out. It runs the go tool from the module containing the working
// directory.
func BuildTestBinary(out string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build nodegc-testbin: %w (or set Options.TestBinary)", err)
	}
	gomod, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("build nodegc-testbin: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		wd, _ := os.Getwd()
		return "", fmt.Errorf("build nodegc-testbin: %s is not inside the nodegc module (or set Options.TestBinary)", wd)
	}
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, testBinPkg)
	cmd.Dir = filepath.Dir(mod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build nodegc-testbin: %w: %s", err, lastLines(string(b), 10))
	}
	return out, nil
}

// overlayWorks reports whether an overlay mount with its upper dir under dir
// (the tmpfs) succeeds, which containerd's overlayfs snapshotter needs.
func overlayWorks(dir string) bool {
	p, err := os.MkdirTemp(dir, ".overlay-probe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(p)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(p, d), 0o700); err != nil {
			return false
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", filepath.Join(p, "lower"), filepath.Join(p, "upper"), filepath.Join(p, "work"))
	if err := syscall.Mount("overlay", filepath.Join(p, "merged"), "overlay", 0, opts); err != nil {
		return false
	}
	_ = syscall.Unmount(filepath.Join(p, "merged"), 0)
	return true
}

package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// installLock serialises installs between test binaries that go test runs
// in parallel, which would otherwise fight over apt's lock.
const installLock = "/tmp/nodegc-realnode.lock"

var installMu sync.Mutex

// lookTool finds a program on PATH or in the sbin directories.
func lookTool(name string) (string, error) {
	for _, d := range filepath.SplitList(toolPath()) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// missingTools returns the tools lookTool cannot find.
func missingTools(tools []string) []string {
	var missing []string
	for _, t := range tools {
		if _, err := lookTool(t); err != nil {
			missing = append(missing, t)
		}
	}
	return missing
}

// ensureTools checks for root, installs what the runtime needs from Debian
// with apt-get when it is missing (containerd and runc for Debian's
// containerd, runc for a runtime with binaries of its own) and checks the
// runtime's own binaries. Every reason this machine cannot run a node wraps
// ErrUnavailable.
func ensureTools(ctx context.Context, rt Runtime, logf func(string, ...any)) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root (running as uid %d)", ErrUnavailable, os.Geteuid())
	}
	if err := installTools(ctx, rt, logf); err != nil {
		return err
	}
	return rt.check()
}

// installTools installs the runtime's system tools with apt-get when they
// are missing.
func installTools(ctx context.Context, rt Runtime, logf func(string, ...any)) error {
	tools := rt.systemTools()
	if len(missingTools(tools)) == 0 {
		return nil
	}
	pkgs := []string{"runc"}
	if rt.BinDir == "" {
		pkgs = []string{"containerd", "runc"}
	}
	installMu.Lock()
	defer installMu.Unlock()
	lock, err := os.OpenFile(installLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open install lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("take install lock: %w", err)
	}
	missing := missingTools(tools)
	if len(missing) == 0 {
		return nil
	}
	apt, err := lookTool("apt-get")
	if err != nil {
		return fmt.Errorf("%w: %s not installed and no apt-get to install them", ErrUnavailable, strings.Join(missing, ", "))
	}
	logf("realnode: %s missing; installing %s with apt-get", strings.Join(missing, ", "), strings.Join(pkgs, " "))
	install := append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)
	for _, args := range [][]string{{"update"}, install} {
		cmd := exec.CommandContext(ctx, apt, args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "PATH="+toolPath())
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: apt-get %s: %v: %s", ErrUnavailable, args[0], err, lastLines(string(out), 5))
		}
	}
	if missing := missingTools(tools); len(missing) > 0 {
		return fmt.Errorf("%w: %s still missing after apt-get install %s", ErrUnavailable, strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// connRef is a gRPC connection that always goes to the node's current
// containerd, so the clients RuntimeClient and ImageClient hand out survive
// Restart. While containerd is stopped every call fails with Unavailable.
type connRef struct{ n *Node }

var errStopped = status.Error(codes.Unavailable, "realnode: containerd is stopped")

func (c connRef) current() *grpc.ClientConn {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return c.n.conn
}

// Invoke implements grpc.ClientConnInterface.
func (c connRef) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	conn := c.current()
	if conn == nil {
		return errStopped
	}
	err := conn.Invoke(ctx, method, args, reply, opts...)
	if status.Code(err) == codes.Canceled && ctx.Err() == nil {
		// The connection was closed under the call by Stop or Restart.
		return status.Error(codes.Unavailable, err.Error())
	}
	return err
}

// NewStream implements grpc.ClientConnInterface.
func (c connRef) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	conn := c.current()
	if conn == nil {
		return nil, errStopped
	}
	return conn.NewStream(ctx, desc, method, opts...)
}

var _ grpc.ClientConnInterface = connRef{}

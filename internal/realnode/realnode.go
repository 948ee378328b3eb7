package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RequireEnv names the environment variable that turns Start's skip into a
// failure when set to "1". CI sets it, so a machine that silently cannot run
// containerd does not pass the real suite by skipping it.
const RequireEnv = "NODEGC_REQUIRE_CONTAINERD"

// DefaultImageFsSize is the tmpfs size used when Options.ImageFsSize is 0.
const DefaultImageFsSize = 256 << 20

// SandboxImageRef is the sandbox (pause) image every node imports and sets as
// the CRI sandbox_image. It runs nodegc-testbin, which sleeps until killed.
const SandboxImageRef = "registry.k8s.io/pause:nodegc"

// StaleGlob matches the directories Launch creates when Options.Dir is empty.
// Launch removes those whose owner process is gone (a crashed test).
const StaleGlob = "/tmp/nodegc-realnode-*"

// ErrUnavailable is wrapped by Launch's error when this machine cannot run a
// real containerd at all: not root, containerd or runc missing with no way to
// install them, or no permission to mount. Start skips on it.
var ErrUnavailable = errors.New("real containerd unavailable")

// opTimeout bounds each CRI call and each wait the harness makes itself.
const opTimeout = 30 * time.Second

// Options configures a node. The zero value is a 256 MiB image filesystem in
// a fresh temp dir.
type Options struct {
	// ImageFsSize is the size in bytes of the tmpfs that holds containerd's
	// root, the image filesystem nodegc measures. 0 means DefaultImageFsSize.
	ImageFsSize int64
	// Dir is the harness directory. Empty means a fresh directory matching
	// StaleGlob. A given Dir must be absolute and empty or missing; it is
	// never cleaned as a stale leftover, so remove it with Cleanup.
	Dir string
	// Snapshotter is containerd's snapshotter. Empty means overlayfs when the
	// kernel mounts overlay on tmpfs, else native.
	Snapshotter string
	// TestBinary is the static nodegc-testbin put in every image. Empty means
	// build it from the module source with `go build` (CGO_ENABLED=0), which
	// needs the go tool and a working directory inside the module.
	TestBinary string
	// Runtime is the containerd to run. The zero value is Containerd16,
	// Debian's package.
	Runtime Runtime
	// Logf receives what the harness does (stale cleanup, installs). Nil
	// discards it; Start uses t.Logf.
	Logf func(format string, args ...any)
}

// Node is a running private containerd with its CRI plugin. Its methods are
// safe for concurrent use; Stop and Restart may run while a test drives CRI
// calls from another goroutine.
type Node struct {
	o             Options
	sandboxConfig string // sandbox_image as configured; "" is SandboxImageRef
	dir           string // the harness dir, removed by Close
	root          string // containerd root: the tmpfs mountpoint
	state         string // containerd state dir
	sock          string // CRI and containerd socket path
	config        string // containerd config.toml
	logFile       string // containerd's stdout and stderr
	podLogs       string // the pods' LogDirectory parent (kubelet's podLogsDir)
	imagesDir     string // built archives
	snapshotter   string
	sandbox       ImageRef

	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient

	binOnce sync.Once
	bin     string
	binErr  error

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	conn     *grpc.ClientConn
	closed   bool
	attempts map[string]uint32                       // pod UID -> next sandbox attempt
	pods     map[string]*runtimeapi.PodSandboxConfig // sandbox ID -> its config
}

// Start launches a node for a test and tears it down in t.Cleanup. Without
// root, containerd or a way to install it, the test is skipped with the
// reason, or fails when RequireEnv is "1". Any other error fails the test.
func Start(t testing.TB, o Options) *Node {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, err := Launch(ctx, o)
	if err != nil {
		if errors.Is(err, ErrUnavailable) && os.Getenv(RequireEnv) != "1" {
			t.Skipf("realnode: %v (set %s=1 to make this a failure)", err, RequireEnv)
		}
		t.Fatalf("realnode: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("realnode: tail of %s:\n%s", n.logFile, n.LogTail(60))
		}
		if err := n.Close(); err != nil {
			t.Errorf("realnode: %v", err)
		}
	})
	return n
}

// Launch starts a node and returns once its CRI socket answers and the
// sandbox image is imported. The caller owns it and must Close it, or, for a
// node meant to outlive the process (make sandbox), Cleanup its Dir later.
// ctx bounds the whole start, an apt install included.
func Launch(ctx context.Context, o Options) (*Node, error) {
	if o.ImageFsSize == 0 {
		o.ImageFsSize = DefaultImageFsSize
	}
	if o.ImageFsSize < 16<<20 {
		return nil, fmt.Errorf("image fs size %d: must be at least 16 MiB", o.ImageFsSize)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Runtime.Name == "" {
		o.Runtime = Containerd16
	}
	if err := ensureTools(ctx, o.Runtime, o.Logf); err != nil {
		return nil, err
	}
	cleanStale(o.Logf)

	dir, err := makeDir(o.Dir)
	if err != nil {
		return nil, err
	}
	n := &Node{
		o:         o,
		dir:       dir,
		root:      filepath.Join(dir, "imagefs"),
		state:     filepath.Join(dir, "state"),
		sock:      filepath.Join(dir, "containerd.sock"),
		config:    filepath.Join(dir, "config.toml"),
		logFile:   filepath.Join(dir, "containerd.log"),
		podLogs:   filepath.Join(dir, "pods"),
		imagesDir: filepath.Join(dir, "images"),
		attempts:  map[string]uint32{},
		pods:      map[string]*runtimeapi.PodSandboxConfig{},
	}
	n.runtime = runtimeapi.NewRuntimeServiceClient(connRef{n})
	n.images = runtimeapi.NewImageServiceClient(connRef{n})
	if err := n.setup(ctx); err != nil {
		n.mu.Lock()
		n.killLocked()
		n.mu.Unlock()
		if cerr := Cleanup(dir); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return n, nil
}

// setup prepares the directory and the tmpfs, starts containerd and imports
// the sandbox image.
func (n *Node) setup(ctx context.Context) error {
	for _, d := range []string{n.root, n.state, n.podLogs, n.imagesDir,
		filepath.Join(n.dir, "bin"), filepath.Join(n.dir, "opt"),
		filepath.Join(n.dir, "cni", "bin"), filepath.Join(n.dir, "cni", "net.d")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	opts := fmt.Sprintf("size=%d,mode=0711", n.o.ImageFsSize)
	if err := syscall.Mount("tmpfs", n.root, "tmpfs", 0, opts); err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("%w: mount tmpfs on %s: %v", ErrUnavailable, n.root, err)
		}
		return fmt.Errorf("mount tmpfs on %s: %w", n.root, err)
	}
	n.snapshotter = n.o.Snapshotter
	if n.snapshotter == "" {
		n.snapshotter = "native"
		if overlayWorks(n.root) {
			n.snapshotter = "overlayfs"
		}
	}
	if err := os.WriteFile(n.config, []byte(n.configTOML()), 0o600); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	// Build the sandbox image before containerd runs, so the go build does
	// not race containerd's start for the CPU.
	archive, img, err := n.BuildImage("registry.k8s.io/pause", "nodegc", 0)
	if err != nil {
		return fmt.Errorf("build sandbox image: %w", err)
	}
	n.sandbox = img
	n.mu.Lock()
	err = n.startLocked(ctx)
	n.mu.Unlock()
	if err != nil {
		return err
	}
	if err := n.Import(archive); err != nil {
		return fmt.Errorf("import sandbox image: %w", err)
	}
	return nil
}

// makeDir creates the harness directory and its owner file.
func makeDir(want string) (string, error) {
	var dir string
	if want == "" {
		d, err := os.MkdirTemp("/tmp", "nodegc-realnode-")
		if err != nil {
			return "", fmt.Errorf("create harness dir: %w", err)
		}
		dir = d
	} else {
		if !filepath.IsAbs(want) {
			return "", fmt.Errorf("harness dir %q: must be absolute", want)
		}
		dir = filepath.Clean(want)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("create harness dir: %w", err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return "", fmt.Errorf("read harness dir: %w", err)
		}
		if len(entries) > 0 {
			return "", fmt.Errorf("harness dir %s is not empty (a node still there? remove it with its down command)", dir)
		}
	}
	if err := writeOwner(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// startLocked starts containerd in its own process group and waits until the
// CRI socket answers Version. n.mu is held.
func (n *Node) startLocked(ctx context.Context) error {
	if n.closed {
		return errors.New("node is closed")
	}
	if n.cmd != nil {
		return errors.New("containerd is already running")
	}
	bin, err := n.o.Runtime.look("containerd")
	if err != nil {
		return fmt.Errorf("find containerd: %w", err)
	}
	// A socket left by a killed containerd would make it refuse to listen.
	if err := os.Remove(n.sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove old socket: %w", err)
	}
	logf, err := os.OpenFile(n.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open containerd log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- realnode: starting containerd at %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, "--config", n.config)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "PATH="+n.o.Runtime.path())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	n.cmd, n.exited = cmd, exited

	conn, err := grpc.NewClient("unix://"+n.sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		n.killLocked()
		return fmt.Errorf("dial %s: %w", n.sock, err)
	}
	n.conn = conn
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	for {
		callCtx, callCancel := context.WithTimeout(ctx, time.Second)
		_, err := rt.Version(callCtx, &runtimeapi.VersionRequest{})
		callCancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			n.killLocked()
			return fmt.Errorf("containerd exited during start (%v); tail of %s:\n%s", cmd.ProcessState, n.logFile, n.LogTail(30))
		case <-ctx.Done():
			n.killLocked()
			return fmt.Errorf("containerd did not answer CRI Version on %s: %v; tail of %s:\n%s", n.sock, err, n.logFile, n.LogTail(30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// killLocked SIGKILLs containerd's process group, waits for it and drops the
// connection. Shims run in their own process groups and survive it, as they
// survive a crash of containerd on a real node. n.mu is held.
func (n *Node) killLocked() {
	if n.conn != nil {
		_ = n.conn.Close()
		n.conn = nil
	}
	if n.cmd == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		n.o.Logf("realnode: containerd pid %d did not exit 10s after SIGKILL", n.cmd.Process.Pid)
	}
	n.cmd, n.exited = nil, nil
}

// Stop kills containerd with SIGKILL, as a crash would, and leaves the rest
// (shims, containers, mounts, root) in place. CRI calls fail with Unavailable
// until Restart. Stopping a stopped node does nothing.
func (n *Node) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("stop: node is closed")
	}
	n.killLocked()
	return nil
}

// Restart kills containerd with SIGKILL if it runs and starts it again on the
// same config, root, state and socket, returning once CRI answers. Running
// containers survive (their shims do), as on a real node.
func (n *Node) Restart() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("restart: node is closed")
	}
	n.killLocked()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := n.startLocked(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// ConfigureSandboxImage writes ref as the CRI sandbox_image of the config
// and restarts containerd, so a test can configure the sandbox image in a
// form known only once the node runs (by digest, say).
func (n *Node) ConfigureSandboxImage(ref string) error {
	n.mu.Lock()
	n.sandboxConfig = ref
	err := os.WriteFile(n.config, []byte(n.configTOML()), 0o600)
	n.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	return n.Restart()
}

// Running reports whether containerd is running (not stopped or closed).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// PID returns containerd's process ID, or 0 while it is stopped.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Close tears the node down: containerd, its shims and their containers are
// killed, everything mounted under Dir is unmounted, the pods' cgroups are
// removed and Dir is deleted. Closing twice does nothing.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.killLocked()
	n.mu.Unlock()
	if err := Cleanup(n.dir); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// Endpoint is the CRI endpoint to pass to nodegc (--runtime-endpoint), in
// the kubelet's unix:// form.
func (n *Node) Endpoint() string { return "unix://" + n.sock }

// Socket is the socket path, for ctr --address.
func (n *Node) Socket() string { return n.sock }

// Dir is the harness directory holding everything the node uses.
func (n *Node) Dir() string { return n.dir }

// Root is containerd's root directory. It is the tmpfs mountpoint, so it is
// the same path as ImageFsMount.
func (n *Node) Root() string { return n.root }

// ImageFsMount is the mountpoint of the tmpfs holding the image filesystem,
// the path to statfs for capacity and usage.
func (n *Node) ImageFsMount() string { return n.root }

// StateDir is containerd's state directory.
func (n *Node) StateDir() string { return n.state }

// PodLogsDir is the parent of the pods' log directories
// (<ns>_<name>_<uid>), what the kubelet calls podLogsDir.
func (n *Node) PodLogsDir() string { return n.podLogs }

// LogFile is containerd's log (stdout and stderr, all starts appended).
func (n *Node) LogFile() string { return n.logFile }

// Runtime is the containerd release the node runs.
func (n *Node) Runtime() Runtime { return n.o.Runtime }

// Snapshotter is the snapshotter containerd runs with: overlayfs or native.
func (n *Node) Snapshotter() string { return n.snapshotter }

// SandboxImage is the imported sandbox image, configured as sandbox_image.
func (n *Node) SandboxImage() ImageRef { return n.sandbox }

// RuntimeClient is a CRI runtime client on the node's socket. It stays valid
// across Stop and Restart (it fails with Unavailable while stopped).
func (n *Node) RuntimeClient() runtimeapi.RuntimeServiceClient { return n.runtime }

// ImageClient is a CRI image client on the node's socket, valid across
// Stop and Restart like RuntimeClient.
func (n *Node) ImageClient() runtimeapi.ImageServiceClient { return n.images }

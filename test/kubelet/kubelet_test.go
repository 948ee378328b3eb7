package kubelet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// The helpers test/cluster shares (internal/kubetest).
var (
	skipOrFail   = kubetest.SkipOrFail
	kubeBinary   = kubetest.Binary
	freePort     = kubetest.FreePort
	startProcess = kubetest.StartProcess
	waitFor      = kubetest.WaitFor
	tail         = kubetest.Tail
	removePods   = kubetest.RemovePods
	removeLinks  = kubetest.RemoveLinks
	unmountUnder = kubetest.UnmountUnder
)

// buildDir holds the binaries built once per test process.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nodegc-kubelet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	realnode.Main(m, func() { os.RemoveAll(dir) })
}

// build builds a command of this module into buildDir once per name.
func build(t *testing.T, pkg, name string) string {
	t.Helper()
	out := filepath.Join(buildDir, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v: %s", pkg, err, b)
	}
	return out
}

// startNode starts a real containerd (Debian's 1.6) with an image
// filesystem of size bytes.
func startNode(t *testing.T, size int64) *realnode.Node {
	t.Helper()
	return startNodeOn(t, size, realnode.Containerd16)
}

// startNodeOn is startNode on the runtime rt.
func startNodeOn(t *testing.T, size int64, rt realnode.Runtime) *realnode.Node {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "a real kubelet needs root (running as uid %d)", os.Geteuid())
	}
	bin := build(t, "github.com/nodegc/nodegc/internal/realnode/cmd/nodegc-testbin", "nodegc-testbin")
	return realnode.Start(t, realnode.Options{ImageFsSize: size, TestBinary: bin, Runtime: rt})
}

// kubeletOptions are the settings of one kubelet run.
type kubeletOptions struct {
	// Flags are extra command-line flags (the container-GC ones live only
	// there).
	Flags []string
	// Kubeconfig registers the kubelet with an API server; "" runs it
	// standalone.
	Kubeconfig string
	// ImageGCHigh and ImageGCLow are imageGCHighThresholdPercent and
	// imageGCLowThresholdPercent; 0 leaves the kubelet's defaults.
	ImageGCHigh, ImageGCLow int
}

// kubelet is a running kubelet process in standalone mode.
type kubelet struct {
	cmd       *exec.Cmd
	done      chan struct{}
	manifests string // staticPodPath
	logFile   string // its stderr: klog at -v=5
	nodeName  string
	// bin, args and dir start it again after a stop.
	bin  string
	args []string
	dir  string
}

// startKubelet runs a standalone kubelet on n: static pods from a manifest
// dir checked every 5 s, host-network pods only, cgroupfs without QoS
// cgroups, no API server, nothing listening but its (random) TLS port. Its
// working directory is an empty scratch dir, since a real kubelet's
// container GC once deleted files in its own working directory. t.Cleanup
// stops it, removes the containers and sandboxes it made, its
// /var/log/containers links and its directories.
func startKubelet(t *testing.T, n *realnode.Node, o kubeletOptions) *kubelet {
	t.Helper()
	bin := kubeBinary(t, "kubelet")
	dir := t.TempDir()
	k := &kubelet{
		done:      make(chan struct{}),
		manifests: filepath.Join(dir, "manifests"),
		logFile:   filepath.Join(dir, "kubelet.log"),
		nodeName:  fmt.Sprintf("nodegc-parity-%d", os.Getpid()),
	}
	scratch := filepath.Join(dir, "cwd")
	rootDir := filepath.Join(dir, "root")
	for _, d := range []string{k.manifests, scratch, rootDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	cfg := kubetest.KubeletConfig(n, port, fmt.Sprintf("staticPodPath: %s\nfileCheckFrequency: 5s\n", k.manifests))
	if o.ImageGCHigh > 0 {
		cfg += fmt.Sprintf("imageGCHighThresholdPercent: %d\nimageGCLowThresholdPercent: %d\n", o.ImageGCHigh, o.ImageGCLow)
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--config=" + cfgFile,
		"--root-dir=" + rootDir,
		"--hostname-override=" + k.nodeName,
		"--v=5",
	}, o.Flags...)
	if o.Kubeconfig != "" {
		args = append(args, "--kubeconfig="+o.Kubeconfig)
	}
	k.bin, k.args, k.dir = bin, args, scratch
	k.start(t)
	t.Cleanup(func() {
		k.stop()
		if t.Failed() {
			t.Logf("kubelet: %v; tail of %s:\n%s", k.cmd.ProcessState, k.logFile, tail(k.logFile, 40))
		}
		removePods(t, n)
		removeLinks(t, n.PodLogsDir())
		if entries, _ := os.ReadDir(scratch); len(entries) > 0 {
			t.Errorf("kubelet left %d entries in its working directory %s", len(entries), scratch)
		}
		unmountUnder(t, rootDir)
	})
	return k
}

// start runs the kubelet process, its output appended to its log file.
func (k *kubelet) start(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(k.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	k.done = make(chan struct{})
	k.cmd = exec.Command(k.bin, k.args...)
	k.cmd.Args[0] = "kubelet" // how nodegc recognises it in /proc
	k.cmd.Dir = k.dir
	k.cmd.Stdout = log
	k.cmd.Stderr = log
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	exited, err := kubetest.StartOnOwnThread(k.cmd)
	if err != nil {
		log.Close()
		t.Fatalf("start kubelet: %v", err)
	}
	done := k.done
	go func() {
		<-exited
		log.Close()
		close(done)
	}()
	// Start returns once the kernel has let go of the parent, before it
	// has laid out the new image's arguments: for a moment
	// /proc/PID/cmdline reads empty, and nodegc (rightly) takes such a
	// process for no kubelet. CI met that moment twice.
	cmdline := fmt.Sprintf("/proc/%d/cmdline", k.cmd.Process.Pid)
	if !kubetest.WaitFor(10*time.Second, func() bool {
		b, _ := os.ReadFile(cmdline)
		return strings.HasPrefix(string(b), "kubelet\x00")
	}) {
		t.Fatalf("the kubelet (pid %d) has no command line 10 s after its start", k.cmd.Process.Pid)
	}
}

// stop ends the kubelet (SIGTERM, then SIGKILL after 10 s) and waits.
func (k *kubelet) stop() {
	select {
	case <-k.done:
		return
	default:
	}
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(10 * time.Second):
		k.cmd.Process.Kill()
		<-k.done
	}
}

// exited reports whether the kubelet has exited.
func (k *kubelet) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// writeManifest puts a static pod manifest in the kubelet's staticPodPath.
func (k *kubelet) writeManifest(t *testing.T, name, manifest string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(k.manifests, name+".yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
}

// staticPod is a host-network static pod of one container named name
// that runs the test binary with args (the image's entrypoint).
func staticPod(name, image, container string, args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  hostNetwork: true
  restartPolicy: Always
  terminationGracePeriodSeconds: 1
  containers:
  - name: %s
    image: %s
    imagePullPolicy: Never
    args: [%s]
`, name, container, image, strings.Join(quoted, ", "))
}

// crashLoopPod is a static pod whose one container exits 1 after
// starting, so the kubelet restarts it with its crash-loop back-off and
// leaves a dead container at every death.
func crashLoopPod(name, image string) string { return staticPod(name, image, "crash", "exit", "1") }

// sleepPod is a static pod whose one container sleeps until stopped, so
// its image stays in use.
func sleepPod(name, image string) string { return staticPod(name, image, "sleep", "sleep") }

// readJSON decodes a JSON file (a NodeSnapshot) into v.
func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
}

// klogLine matches a klog text header and its message:
// I1124 08:40:01.123456   12345 file.go:123] "Message" key="value" ...
var klogLine = regexp.MustCompile(`^[IWEF](\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6})\s+\d+ (\S+):\d+\] "([^"]*)"(.*)$`)

// logEntry is one line of the kubelet's log.
type logEntry struct {
	At   time.Time
	File string // source file that logged it
	Msg  string
	Rest string // the key="value" pairs
}

// readLog parses the kubelet's log. klog prints no year and local time; the
// year is taken from year.
func readLog(path string, year int) ([]logEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []logEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		m := klogLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006 0102 15:04:05.000000", strconv.Itoa(year)+" "+m[1]+" "+m[2], time.Local)
		if err != nil {
			continue
		}
		out = append(out, logEntry{At: at, File: m[3], Msg: m[4], Rest: m[5]})
	}
	return out, sc.Err()
}

// value returns a key="value" pair's value from an entry's rest.
func (e logEntry) value(key string) string {
	i := strings.Index(e.Rest, " "+key+"=\"")
	if i < 0 {
		return ""
	}
	s := e.Rest[i+len(key)+3:]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return ""
}

// logLines returns the kubelet's log lines that keep accepts, in order.
func logLines(entries []logEntry, keep func(logEntry) bool) []logEntry {
	var out []logEntry
	for _, e := range entries {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/critest"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestTrust holds issue 20's findings about what root nodegc believes: the
// files it writes, the process it takes for the kubelet, the files and
// credentials that process names, and the bounds of its flags. Each row
// failed on main at d834c30.
//
// The planted-kubelet rows run real processes named kubelet (bash under
// `exec -a kubelet`, as root or, through setpriv, as uid 65534) and
// nodegc beside them in new PID and mount namespaces (onNode): nodegc sees
// only them in its /proc, the host's kubelet files are hidden under a
// tmpfs, and no other nodegc on the host can mistake them for its kubelet.
// What they plant lives in the test's temp dirs.
func TestTrust(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the trust rows need root: nodegc's rule is about what root believes")
	}
	for _, a := range trustAttacks {
		t.Run(fmt.Sprintf("%02d %s", a.item, a.name), func(t *testing.T) {
			if err := a.run(t); err != nil {
				t.Error(err)
			}
		})
	}
}

// nobody is the uid of the planting user.
const nobody = 65534

var trustAttacks = []attack{
	{0, "snapshot -o a character device (a null device made here) writes to it in place, never replacing it", func(t *testing.T) error {
		dev := filepath.Join(t.TempDir(), "null")
		if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			return err
		}
		r := nodegc(t, snapshotArgs(t, "-o", dev)...)
		if fi, err := os.Lstat(dev); err != nil || fi.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
			return fmt.Errorf("exit %d (%s); afterwards %s is %v (%v), want the character device", r.code, r.stderr, dev, fi.Mode().Type(), err)
		}
		if r.code != 0 {
			return fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		return nil
	}},
	{0, "snapshot -o a FIFO writes the document into it, never replacing it", func(t *testing.T) error {
		fifo := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			return err
		}
		// Held open read-write, the FIFO has a reader (nodegc's open does not
		// wait) and never reports EOF; the read ends at a deadline after
		// nodegc exits, so a replaced FIFO cannot hang the test.
		f, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		var got bytes.Buffer
		copied := make(chan struct{})
		go func() { io.Copy(&got, f); close(copied) }()
		r := nodegc(t, snapshotArgs(t, "-o", fifo)...)
		f.SetReadDeadline(time.Now().Add(time.Second))
		<-copied
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
			return fmt.Errorf("exit %d (%s); afterwards %s is %v (%v), want the FIFO", r.code, r.stderr, fifo, fi.Mode().Type(), err)
		}
		if r.code != 0 || !strings.Contains(got.String(), `"NodeSnapshot"`) {
			return fmt.Errorf("exit %d (%s); the FIFO's reader got %d bytes, want the snapshot", r.code, r.stderr, got.Len())
		}
		return nil
	}},
	{0, "snapshot -o a symlink is refused in one line with exit 2, the link and its target left as they were", func(t *testing.T) error {
		dir := t.TempDir()
		target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link.json")
		if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil {
			return err
		}
		r := nodegc(t, snapshotArgs(t, "-o", link)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		dest, lerr := os.Readlink(link)
		data, _ := os.ReadFile(target)
		if r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], link+" is a symlink") || lerr != nil || dest != target || string(data) != "keep" {
			return fmt.Errorf("exit %d, stderr %q; link -> %q (%v), target %q; want exit 2 in one line and both untouched", r.code, r.stderr, dest, lerr, data)
		}
		return nil
	}},
	{0, "--log-file a symlink another user planted is refused in one line naming the flag, with exit 2; the link's target gets nothing", func(t *testing.T) error {
		dir := t.TempDir()
		target, link := filepath.Join(dir, "shadow"), filepath.Join(dir, "gc.log")
		if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil {
			return err
		}
		if err := os.Lchown(link, nobody, nobody); err != nil {
			return err
		}
		return logFileRefused(t, link, target, "is a symlink")
	}},
	{0, "--log-file a FIFO is refused in one line naming the flag, with exit 2, never blocking", func(t *testing.T) error {
		fifo := filepath.Join(t.TempDir(), "gc.log")
		if err := syscall.Mkfifo(fifo, 0o666); err != nil {
			return err
		}
		return logFileRefused(t, fifo, "", "is not a regular file")
	}},
	{0, "--log-file a second hard link to root's file is refused in one line naming the flag, with exit 2; the file gets nothing", func(t *testing.T) error {
		dir := t.TempDir()
		target, link := filepath.Join(dir, "shadow"), filepath.Join(dir, "gc.log")
		if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
			return err
		}
		if err := os.Link(target, link); err != nil {
			return err
		}
		return logFileRefused(t, link, target, "has 2 hard links")
	}},
	{0, "plan --from a snapshot whose image tag carries terminal escape sequences prints them escaped, never raw", func(t *testing.T) error {
		r := nodegc(t, snapshotArgs(t)...)
		var snap map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil || r.code != 0 {
			return fmt.Errorf("snapshot: exit %d, %v, stderr %q", r.code, err, r.stderr)
		}
		imgs, _ := snap["images"].([]any)
		if len(imgs) == 0 {
			return fmt.Errorf("the snapshot has no images: %.200s", r.stdout)
		}
		imgs[0].(map[string]any)["repoTags"] = []string{"evil\x1b]0;owned\x07:1\x1b[2J\rkept"}
		data, err := json.Marshal(snap)
		if err != nil {
			return err
		}
		file := filepath.Join(t.TempDir(), "snapshot.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return err
		}
		r = nodegc(t, "plan", "--from", file, "--reclaim-all")
		if r.code != 0 || !strings.Contains(r.stdout, `evil\x1b]0;owned\x07:1\x1b[2J\x0dkept`) {
			return fmt.Errorf("exit %d, stderr %q; want the tag printed escaped:\n%s", r.code, r.stderr, r.stdout)
		}
		if strings.ContainsAny(r.stdout, "\x1b\x07\r") {
			return fmt.Errorf("the plan printed a raw control character:\n%q", r.stdout)
		}
		return nil
	}},
	{0, "--log-file a file another user planted is refused in one line naming the flag, with exit 2; the file gets nothing", func(t *testing.T) error {
		planted := filepath.Join(t.TempDir(), "gc.log")
		if err := os.WriteFile(planted, []byte("keep"), 0o666); err != nil {
			return err
		}
		if err := os.Chown(planted, nobody, nobody); err != nil {
			return err
		}
		return logFileRefused(t, planted, planted, fmt.Sprintf("is owned by uid %d", nobody))
	}},
	{1, "a non-root process named kubelet whose --kubeconfig has an exec plugin does not make root run the plugin", func(t *testing.T) error {
		p := plant(t)
		r := onNode(t, []fakeKubelet{{uid: nobody, args: []string{"--kubeconfig", p.execConf(t, p.eve)}}}, p.podSourceArgs(t)...)
		return p.pluginNeverRan(r)
	}},
	{1, "a root kubelet's --kubeconfig in a directory another user owns is not used: its plugin does not run, and the warning names the process and the file", func(t *testing.T) error {
		p := plant(t)
		conf := p.execConf(t, p.eve)
		r := onNode(t, []fakeKubelet{{uid: 0, args: []string{"--kubeconfig", conf}}}, p.podSourceArgs(t)...)
		if err := p.pluginNeverRan(r); err != nil {
			return err
		}
		if !strings.Contains(r.stderr, "kubelet command line (pid ") || !strings.Contains(r.stderr, conf+": not used: "+p.eve+": owned by uid 65534, not root") {
			return fmt.Errorf("stderr %q: want the refusal, naming the kubelet and %s", r.stderr, conf)
		}
		return nil
	}},
	{1, "an exec plugin another user can replace is refused even in root's own kubeconfig, saying so", func(t *testing.T) error {
		p := plant(t)
		r := onNode(t, []fakeKubelet{{uid: 0, args: []string{"--kubeconfig", p.execConf(t, p.root)}}}, p.podSourceArgs(t)...)
		if err := p.pluginNeverRan(r); err != nil {
			return err
		}
		if !strings.Contains(r.stderr, "exec credential plugin "+p.plugin+" refused") {
			return fmt.Errorf("stderr %q: want the plugin's refusal", r.stderr)
		}
		return nil
	}},
	{1, "a tokenFile another user can write is never sent to the API server", func(t *testing.T) error {
		p := plant(t)
		token := filepath.Join(p.eve, "token")
		p.write(t, token, "planted-token", 0o644)
		conf := p.kubeconfig(t, p.root, "    tokenFile: "+token+"\n")
		r := onNode(t, []fakeKubelet{{uid: 0, args: []string{"--kubeconfig", conf}}}, p.podSourceArgs(t)...)
		if auth := p.authorizations(); strings.Contains(strings.Join(auth, " "), "planted-token") {
			return fmt.Errorf("the API server was sent the planted token file (%q); exit %d, stderr %q", auth, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "tokenFile refused") {
			return fmt.Errorf("exit %d, stderr %q: want the token file's refusal", r.code, r.stderr)
		}
		return nil
	}},
	{1, "a root process named kubelet in mount and PID namespaces of its own (root in a container) is not the kubelet: the root-owned exec plugin of its root-owned --kubeconfig does not run", func(t *testing.T) error {
		p := plant(t)
		r := onNode(t, []fakeKubelet{{uid: 0, container: true, args: []string{"--kubeconfig", p.rootExecConf(t)}}}, p.podSourceArgs(t)...)
		if err := p.pluginNeverRan(r); err != nil {
			return err
		}
		if !strings.Contains(r.stderr, "is named kubelet but is ignored: it runs in a PID namespace of its own") {
			return fmt.Errorf("stderr %q: want the warning naming the process and its namespace", r.stderr)
		}
		return nil
	}},
	{3, "a non-root process named kubelet with --image-gc-high-threshold=0 does not change the operator's policy", func(t *testing.T) error {
		p := plant(t)
		r := onNode(t, []fakeKubelet{{uid: nobody, args: []string{"--image-gc-high-threshold=0", "--image-gc-low-threshold=0", "--minimum-image-ttl-duration=0s"}}},
			append(p.planArgs(t), "-o", "json")...)
		return imagesPlanned(r, 0)
	}},
	{3, "a root kubelet's --config in a directory another user owns is not read: its imageGCHighThresholdPercent 0 is not applied", func(t *testing.T) error {
		p := plant(t)
		cfg := filepath.Join(p.eve, "config.yaml")
		p.write(t, cfg, "kind: KubeletConfiguration\nimageGCHighThresholdPercent: 0\nimageGCLowThresholdPercent: 0\nimageMinimumGCAge: 0s\n", 0o644)
		r := onNode(t, []fakeKubelet{{uid: 0, args: []string{"--config", cfg}}}, append(p.planArgs(t), "-o", "json")...)
		if err := imagesPlanned(r, 0); err != nil {
			return err
		}
		if !strings.Contains(r.stderr, "the --config of the kubelet command line (pid ") || !strings.Contains(r.stderr, cfg+" is not used") {
			return fmt.Errorf("stderr %q: want one warning naming the kubelet and %s", r.stderr, cfg)
		}
		return nil
	}},
	{4, "a second, non-root process named kubelet beside the real one does not make nodegc exit 2", func(t *testing.T) error {
		p := plant(t)
		r := onNode(t, []fakeKubelet{{uid: 0, args: []string{"--maximum-dead-containers=7"}}, {uid: nobody, args: []string{"--maximum-dead-containers=0"}}}, p.planArgs(t)...)
		if r.code != 0 {
			return fmt.Errorf("exit %d, stderr %q; want 0", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "--maximum-dead-containers                7              kubelet command line (pid ") {
			return fmt.Errorf("the plan did not read the root kubelet:\n%s", r.stdout)
		}
		return nil
	}},
	{4, "a root process named kubelet in namespaces of its own beside the real one does not make nodegc exit 2, nor lend it its flags", func(t *testing.T) error {
		p := plant(t)
		r := onNode(t, []fakeKubelet{{uid: 0, args: []string{"--maximum-dead-containers=7"}}, {uid: 0, container: true, args: []string{"--maximum-dead-containers=0"}}}, p.planArgs(t)...)
		if r.code != 0 {
			return fmt.Errorf("exit %d, stderr %q; want 0", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "--maximum-dead-containers                7              kubelet command line (pid ") {
			return fmt.Errorf("the plan did not read the host's kubelet:\n%s", r.stdout)
		}
		return nil
	}},
	{12, "--parallel past its maximum is refused in one line naming the flag, with exit 2, before anything is read", func(t *testing.T) error {
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--parallel", "100000000", "--runtime-endpoint", "unix:///nonexistent/nodegc.sock", "--state-dir", t.TempDir())
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--parallel: must be auto or from 1 to 64, got 100000000") {
			return fmt.Errorf("exit %d, stderr %q; want 2 and one line naming --parallel and its maximum", r.code, r.stderr)
		}
		return nil
	}},
}

// snapshotArgs are a snapshot of a small simulated node that reads no
// kubelet and asks no API server.
func snapshotArgs(t *testing.T, extra ...string) []string {
	_, ep := startSimnode(t)
	return append([]string{"snapshot", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--kubelet-pid", "-1", "--pod-source", "off"}, extra...)
}

// logFileRefused runs a dry-run gc pass of a small simulated node with
// --log-file path and checks that it exits 2 with one line naming the flag,
// the path and why (want), and that target, when given, still holds only
// "keep".
func logFileRefused(t *testing.T, path, target, want string) error {
	_, ep := startSimnode(t)
	r := nodegc(t, "gc", "--dry-run", "--containers", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--kubelet-pid", "-1", "--pod-source", "off", "--log-file", path)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.hung || r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "--log-file: "+path+" "+want) {
		return fmt.Errorf("exit %d (hung %v), stderr %q; want exit 2 and one line: --log-file: %s %s", r.code, r.hung, r.stderr, path, want)
	}
	if target != "" {
		if data, err := os.ReadFile(target); err != nil || string(data) != "keep" {
			return fmt.Errorf("%s now holds %q (%v): root wrote through the log file's name", target, data, err)
		}
	}
	return nil
}

// imagesPlanned checks that the plan r wrote as JSON removes want images.
func imagesPlanned(r run, want int) error {
	var plan struct {
		ImageGC struct {
			Remove []json.RawMessage `json:"remove"`
		} `json:"imageGC"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil || r.code != 0 {
		return fmt.Errorf("exit %d, stderr %q, plan %v", r.code, r.stderr, err)
	}
	if got := len(plan.ImageGC.Remove); got != want {
		return fmt.Errorf("the plan removes %d images, want %d: the planted settings were applied", got, want)
	}
	return nil
}

// planted is what a non-root user puts on the node: eve is their
// directory (uid 65534), root is one of root's own beside it; plugin is an
// exec credential plugin in eve that creates marker when it runs. api is
// an API server that records the Authorization headers it is sent.
type planted struct {
	eve, root, plugin, marker string
	simnodeEP, state          string
	api                       *httptest.Server
	mu                        sync.Mutex
	auth                      []string
}

// plant makes the planted files and a simulated node below its high
// threshold (its policy removes no image), removed when the test ends.
func plant(t *testing.T) *planted {
	t.Helper()
	dir := t.TempDir()
	p := &planted{eve: filepath.Join(dir, "eve"), root: filepath.Join(dir, "root"), marker: filepath.Join(t.TempDir(), "plugin-ran"), state: t.TempDir()}
	for _, d := range []string{p.eve, p.root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.plugin = filepath.Join(p.eve, "plugin")
	p.write(t, p.plugin, "#!/bin/sh\ntouch "+p.marker+"\n"+
		`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-the-plugin"}}'`+"\n", 0o755)
	if err := os.Chown(p.eve, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	p.api = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.mu.Unlock()
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
	}))
	t.Cleanup(p.api.Close)
	_, p.simnodeEP = simnode.ServeTemp(t, simnode.Options{Seed: 7, Images: 8, Pods: 3, MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20,
		InitialUsagePercent: 50, Start: time.Now().Add(-24 * time.Hour), Mountpoint: p.state})
	return p
}

// write writes a file the planting user owns (in eve) or root's.
func (p *planted) write(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(path, p.eve+"/") {
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
}

// kubeconfig writes a kubeconfig for the API server in dir whose user is
// the YAML given, and returns its path.
func (p *planted) kubeconfig(t *testing.T, dir, user string) string {
	path := filepath.Join(dir, "kubelet.conf")
	p.write(t, path, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+p.api.URL+"\n    insecure-skip-tls-verify: true\n"+
		"users:\n- name: u\n  user:\n"+user+"contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n", 0o600)
	return path
}

// rootExecConf writes, in root's directory, an exec credential plugin
// that creates marker when it runs and a kubeconfig whose user's
// credential it is: both owned by root and writable by no one else, as a
// container's image files are on the host.
func (p *planted) rootExecConf(t *testing.T) string {
	plugin := filepath.Join(p.root, "plugin")
	p.write(t, plugin, "#!/bin/sh\ntouch "+p.marker+"\n"+
		`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-the-plugin"}}'`+"\n", 0o755)
	return p.kubeconfig(t, p.root, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: "+plugin+"\n")
}

// execConf writes a kubeconfig in dir whose user's credential is the
// planted exec plugin.
func (p *planted) execConf(t *testing.T, dir string) string {
	return p.kubeconfig(t, dir, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: "+p.plugin+"\n")
}

// planArgs are a live plan of the simulated node.
func (p *planted) planArgs(t *testing.T) []string {
	return []string{"plan", "--simulated", "--runtime-endpoint", p.simnodeEP, "--state-dir", p.state}
}

// podSourceArgs are a live plan of the simulated node taken for a real
// runtime, so the pod source starts and asks the API server.
func (p *planted) podSourceArgs(t *testing.T) []string {
	return []string{"plan", "--runtime-endpoint", asRealRuntime(t, p.simnodeEP), "--state-dir", p.state}
}

// pluginNeverRan checks that the planted plugin did not run.
func (p *planted) pluginNeverRan(r run) error {
	if _, err := os.Stat(p.marker); err == nil {
		return fmt.Errorf("root ran the planted exec plugin (exit %d, stderr %q)", r.code, r.stderr)
	}
	if r.hung {
		return fmt.Errorf("nodegc hung: %q", r.stderr)
	}
	return nil
}

// authorizations are the Authorization headers the API server was sent.
func (p *planted) authorizations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.auth...)
}

// fakeKubelet is a process named kubelet: bash run as `kubelet -c ...
// kubelet ARGS`, so its command line carries args as kubelet flags, as
// uid (0 for root, else through setpriv); container runs it in mount and
// PID namespaces of its own, as a container's process runs.
type fakeKubelet struct {
	uid       int
	container bool
	args      []string
}

// onNode runs nodegc with args in new PID and mount namespaces, beside the
// given processes named kubelet, and returns how it ended. In the mount
// namespace the host's kubelet config and kubeconfig dirs, when they
// exist, are covered by an empty tmpfs, so nodegc reads none of the
// host's. When nodegc exits the kubelets are killed (SIGKILL: unshare
// blocks SIGTERM while it waits for its child) and the namespace's init
// exits, and the kernel ends every process left in it, those of a
// kubelet's own PID namespace too; on a hang the whole group is killed.
func onNode(t *testing.T, kubelets []fakeKubelet, args ...string) run {
	t.Helper()
	var script strings.Builder
	script.WriteString("for d in /etc/kubernetes /var/lib/kubelet; do if [ -d $d ]; then mount -t tmpfs -o mode=0755 tmpfs $d || exit 97; fi; done\n")
	for _, k := range kubelets {
		cmd := "exec -a kubelet bash -c 'sleep 300 & wait' kubelet " + shellQuote(k.args...)
		prefix := ""
		if k.uid != 0 {
			prefix = fmt.Sprintf("setpriv --reuid %d --regid %d --clear-groups ", k.uid, k.uid)
		}
		if k.container {
			prefix += "unshare --mount --pid --fork "
		}
		fmt.Fprintf(&script, "%sbash -c %s &\n", prefix, shellQuote(cmd))
	}
	script.WriteString(runWithKubelets(len(kubelets), ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private",
		"bash", "-c", script.String(), "onNode", binary(t)}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	r := finish(ctx, cmd)
	if r.code == 97 || r.code == 98 {
		t.Fatalf("setting up the namespace failed (exit %d): %s", r.code, r.stderr)
	}
	return r
}

// shellQuote quotes each word for sh and joins them with spaces.
func shellQuote(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// asRealRuntime serves, on a socket in a temp dir, a proxy to the CRI
// endpoint ep that drops simnode's mark from the runtime's Status info:
// nodegc, run without --simulated, then takes it for a real runtime,
// measures its image filesystem with statfs, and starts its pod source, as
// it does beside containerd.
func asRealRuntime(t *testing.T, ep string) string {
	t.Helper()
	backend, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		cs, err := backend.NewStream(ss.Context(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		go func() {
			for {
				var b []byte
				if err := ss.RecvMsg(&b); err != nil {
					cs.CloseSend()
					return
				}
				if cs.SendMsg(&b) != nil {
					return
				}
			}
		}()
		for {
			var b []byte
			if err := cs.RecvMsg(&b); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if method == "/runtime.v1.RuntimeService/Status" {
				var st runtimeapi.StatusResponse
				if err := proto.Unmarshal(b, &st); err != nil {
					return err
				}
				delete(st.Info, simnode.ImageFsInfoKey)
				if b, err = proto.Marshal(&st); err != nil {
					return err
				}
			}
			if err := ss.SendMsg(&b); err != nil {
				return err
			}
		}
	}))
	return critest.ServeGRPC(t, srv)
}

// rawCodec passes gRPC messages through as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// runWithKubelets is the end of a script that started n processes named
// kubelet in the background: it waits until every one has become a
// process named kubelet (exit 98 if they never do), runs the script's
// arguments with prefix (a command that runs them, or ""), ends the
// kubelets and exits with the arguments' status.
func runWithKubelets(n int, prefix string) string {
	return fmt.Sprintf(`for i in $(seq 400); do
	n=0
	for c in /proc/[0-9]*/cmdline; do IFS= read -r -d '' a0 < $c 2>/dev/null && [ "$a0" = kubelet ] && n=$((n+1)); done
	[ $n -ge %d ] && break
	sleep 0.05
done
[ $n -ge %d ] || exit 98
%s"$@"
rc=$?
kill -KILL $(jobs -p) 2>/dev/null
wait
exit $rc
`, n, n, prefix)
}

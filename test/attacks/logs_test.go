package attacks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestAttacksLogs holds the rows of issue 20 about log GC: item 2 (root
// deletes /etc/shadow), item 13 (a crash between a container's removal
// and its log's leaks the log) and the links a pod log dir's removal
// leaves dangling.
func TestAttacksLogs(t *testing.T) {
	runAttacks(t, logAttacks)
}

const (
	plantNS, plantPod, plantUID = "ns", "web", "uid1"
	labelPodUID                 = "io.kubernetes.pod.uid"
)

// plantedNode serves an empty simulated node and plants one pod in it,
// whose sandbox logs in logDir, with one exited container "app" per log
// path (relative to logDir, as the kubelet asks), oldest first. It
// returns the endpoint and the containers' IDs.
func plantedNode(t *testing.T, logDir string, logPaths ...string) (*simnode.Node, string, []string) {
	t.Helper()
	node, ep := simnode.ServeTemp(t, simnode.Options{Seed: 20, Images: 1, Pods: 0, Start: time.Now().Add(-time.Hour)})
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	const ref = "docker.io/library/busybox:1.36"
	if _, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{labelPodUID: plantUID, "io.kubernetes.pod.name": plantPod, "io.kubernetes.pod.namespace": plantNS}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: plantPod, Uid: plantUID, Namespace: plantNS}, LogDirectory: logDir, Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, p := range logPaths {
		ct, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: uint32(i)}, Image: &runtimeapi.ImageSpec{Image: ref}, LogPath: p, Labels: labels}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ct.ContainerId}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ct.ContainerId}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ct.ContainerId)
	}
	return node, ep, ids
}

// deletingEngine is an engine over the runtime at ep that removes from
// podLogs, with links in links, and journals in stateDir (a temp dir when
// ""); remover, when not nil, wraps the client's removals.
func deletingEngine(t *testing.T, ep, podLogs, links, stateDir string, remover func(*cri.Client) engine.Remover) (*engine.Engine, error) {
	t.Helper()
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	p := engine.DefaultPolicy()
	p.PodLogsDir = podLogs
	var rm engine.Remover = c
	if remover != nil {
		rm = remover(c)
	}
	if stateDir == "" {
		stateDir = t.TempDir()
	}
	e, err := engine.New(engine.Options{Reader: c, Remover: rm, Policy: p, StateDir: stateDir, ContainerLogsDir: links})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { e.Close() })
	return e, nil
}

// removeContainers applies a plan that removes the containers.
func removeContainers(e *engine.Engine, ids ...string) (engine.PassReport, error) {
	p := engine.Plan{EvaluatedAt: e.Now(), Pass: engine.PassContainers}
	for _, id := range ids {
		p.ContainerGC.Remove = append(p.ContainerGC.Remove, engine.ContainerRemoval{ID: id, PodUID: plantUID, Name: "app",
			PodName: plantPod, PodNamespace: plantNS, Reason: engine.RemovePerContainerLimit})
	}
	return e.Apply(context.Background(), p)
}

// logDirs makes a root-owned pod logs dir and links dir under a temp dir.
func logDirs(t *testing.T) (root, pods, links string) {
	t.Helper()
	root = t.TempDir()
	pods, links = filepath.Join(root, "pods"), filepath.Join(root, "containers")
	for _, d := range []string{pods, links} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, pods, links
}

func write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte("secret"), 0o600)
}

// inPrivateMounts runs script with sh in a private mount namespace where
// /var/log (and /etc when etc is set) is an empty tmpfs, so that nothing
// real on the node is touched whatever nodegc does, and in a PID
// namespace of its own, so that a kubelet running on this machine (a
// real-kubelet test beside this one) is not nodegc's to read. It returns
// the script's output.
func inPrivateMounts(t *testing.T, etc bool, script string, env ...string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a private mount namespace needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	pre := "set -e\nmount -t tmpfs -o mode=0755 tmpfs /var/log\n"
	if etc {
		pre += "mount -t tmpfs -o mode=0755 tmpfs /etc\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--mount-proc", "-m", "--propagation", "private", "sh", "-c", pre+"set +e\n"+script)
	cmd.Env = append(os.Environ(), append(env, "NODEGC="+binary(t))...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// recordingRemover notes, at each RemoveContainer, whether the log was
// already gone.
type recordingRemover struct {
	engine.Remover
	log       string
	logBefore atomic.Bool
}

func (r *recordingRemover) RemoveContainer(ctx context.Context, id string) error {
	_, err := os.Lstat(r.log)
	r.logBefore.Store(errors.Is(err, os.ErrNotExist))
	return r.Remover.RemoveContainer(ctx, id)
}

var logAttacks = []attack{
	{2, "a dead container's log path to a file in the pod logs dir but outside the kubelet's layout does not get it deleted", func(t *testing.T) error {
		root := t.TempDir()
		etc := filepath.Join(root, "etc")
		shadow := filepath.Join(etc, "shadow")
		if err := write(shadow); err != nil {
			return err
		}
		_, ep, ids := plantedNode(t, etc, "shadow")
		e, err := deletingEngine(t, ep, etc, filepath.Join(root, "containers"), "", nil)
		if err != nil {
			return err
		}
		r, err := removeContainers(e, ids...)
		if err != nil {
			return err
		}
		if _, err := os.Stat(shadow); err != nil {
			return fmt.Errorf("%s, the log path of a dead container, was deleted: %+v", shadow, r.Items)
		}
		return nil
	}},
	{2, "podLogsDir /etc is refused (exit 2 naming the flag) and /etc/shadow stays, in a private mount namespace", func(t *testing.T) error {
		_, ep, _ := plantedNode(t, "/etc", "shadow", "passwd")
		// The pod's log dir is there too, as nodegc expects of a pod whose
		// container has logs.
		out, err := inPrivateMounts(t, true, `echo secret > /etc/shadow
mkdir /etc/`+plantNS+"_"+plantPod+"_"+plantUID+`
"$NODEGC" gc --containers --yes --simulated --runtime-endpoint "$EP" --state-dir "$STATE" --pod-logs-dir /etc 2>&1
echo "exit=$?"
test -e /etc/shadow && echo "shadow kept" || echo "shadow deleted"`, "EP="+ep, "STATE="+t.TempDir())
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.Contains(out, "exit=2") || !strings.Contains(out, "--pod-logs-dir") || !strings.Contains(out, "shadow kept") {
			return fmt.Errorf("gc --pod-logs-dir /etc: %s; want exit 2 naming --pod-logs-dir, /etc/shadow kept", out)
		}
		return nil
	}},
	{2, "a pod logs dir owned by another user is refused (exit 2 naming the flag) and nothing in it is deleted", func(t *testing.T) error {
		root, pods, _ := logDirs(t)
		log := filepath.Join(pods, plantNS+"_"+plantPod+"_"+plantUID, "app", "0.log")
		if err := write(log); err != nil {
			return err
		}
		if err := os.Chown(pods, 65534, 65534); err != nil {
			return err
		}
		_, ep, _ := plantedNode(t, filepath.Dir(filepath.Dir(log)), "app/0.log", "app/1.log")
		out, err := inPrivateMounts(t, false, `"$NODEGC" gc --containers --yes --simulated --runtime-endpoint "$EP" --state-dir "$STATE" --pod-logs-dir "$PODS" 2>&1
echo "exit=$?"`, "EP="+ep, "STATE="+filepath.Join(root, "state"), "PODS="+pods)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if _, err := os.Stat(log); err != nil || !strings.Contains(out, "exit=2") || !strings.Contains(out, "--pod-logs-dir") {
			return fmt.Errorf("gc with a pod logs dir uid 65534 owns: %s (log: %v); want exit 2 naming --pod-logs-dir, nothing deleted", out, err)
		}
		return nil
	}},
	{2, "a container log dir swapped for a symlink to another dir while the pass runs never gets a file there deleted", func(t *testing.T) error {
		root, pods, links := logDirs(t)
		podDir := filepath.Join(pods, plantNS+"_"+plantPod+"_"+plantUID)
		app, swap, outside := filepath.Join(podDir, "app"), filepath.Join(podDir, "app.swap"), filepath.Join(root, "outside")
		const n = 40
		var paths []string
		for i := range n {
			name := fmt.Sprintf("%d.log", i)
			paths = append(paths, "app/"+name)
			if err := write(filepath.Join(app, name)); err != nil {
				return err
			}
			if err := write(filepath.Join(outside, name)); err != nil {
				return err
			}
		}
		if err := os.Symlink(outside, swap); err != nil {
			return err
		}
		if err := unix.Renameat2(unix.AT_FDCWD, app, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
			t.Skipf("RENAME_EXCHANGE: %v", err)
		}
		unix.Renameat2(unix.AT_FDCWD, app, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE)
		_, ep, ids := plantedNode(t, podDir, paths...)
		e, err := deletingEngine(t, ep, pods, links, "", nil)
		if err != nil {
			return err
		}
		// The attacker flips app between the real dir and the symlink.
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				unix.Renameat2(unix.AT_FDCWD, app, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE)
			}
		})
		_, err = removeContainers(e, ids...)
		stop.Store(true)
		wg.Wait()
		if err != nil {
			return err
		}
		var gone []string
		for i := range n {
			if _, err := os.Stat(filepath.Join(outside, fmt.Sprintf("%d.log", i))); err != nil {
				gone = append(gone, fmt.Sprintf("%d.log", i))
			}
		}
		if len(gone) > 0 {
			return fmt.Errorf("files outside the pod logs dir deleted through the symlink: %v", gone)
		}
		return nil
	}},
	{13, "a container's log is removed before the container, and both are journalled", func(t *testing.T) error {
		_, pods, links := logDirs(t)
		podDir := filepath.Join(pods, plantNS+"_"+plantPod+"_"+plantUID)
		log := filepath.Join(podDir, "app", "0.log")
		if err := write(log); err != nil {
			return err
		}
		_, ep, ids := plantedNode(t, podDir, "app/0.log")
		var rec *recordingRemover
		state := t.TempDir()
		e, err := deletingEngine(t, ep, pods, links, state, func(c *cri.Client) engine.Remover {
			rec = &recordingRemover{Remover: c, log: log}
			return rec
		})
		if err != nil {
			return err
		}
		r, err := removeContainers(e, ids...)
		if err != nil {
			return err
		}
		if !rec.logBefore.Load() {
			return fmt.Errorf("the log was still there when the container was removed: a crash between the two leaks it (%+v)", r.Items)
		}
		lines, err := engine.ReadJournalLines(state)
		if err != nil {
			return err
		}
		var order []string
		for _, l := range lines {
			order = append(order, string(l.Op)+" "+string(l.Kind))
		}
		want := "intent container,intent log,removed log,removed container"
		if strings.Join(order, ",") != want {
			return fmt.Errorf("journal %v, want %s", order, want)
		}
		return nil
	}},
	{0, "the /var/log/containers links a pod log dir's removal leaves dangling are planned with it", func(t *testing.T) error {
		s := fullNode()
		s.PodSource = engine.PodSource{Ready: true, RemovablePodUIDs: []string{plantUID}}
		dir := "/var/log/pods/" + plantNS + "_" + plantPod + "_" + plantUID
		link := "/var/log/containers/web_ns_app-c1.log"
		s.Logs = &engine.LogFiles{PodLogsDir: "/var/log/pods", PodDirs: []string{filepath.Base(dir)},
			ContainerLinks: []engine.LogLink{{Path: link, Target: dir + "/app/0.log", ContainerID: "c1"}}}
		p := engine.PlanPass(s, engine.DefaultPolicy(), engine.PassContainers, t0)
		var got []string
		for _, r := range p.LogGC.Remove {
			got = append(got, r.Path)
		}
		if strings.Join(got, " ") != dir+" "+link {
			return fmt.Errorf("log plan %v, want the pod dir, then its link", got)
		}
		return nil
	}},
}

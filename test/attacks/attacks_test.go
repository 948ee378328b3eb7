package attacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/engine/executor"
	"github.com/nodegc/nodegc/internal/critest"
	"github.com/nodegc/nodegc/internal/proctest"
	"github.com/nodegc/nodegc/internal/realnode"
	"github.com/nodegc/nodegc/internal/simnode"
)

// attack is one row: run returns nil when nodegc resisted.
type attack struct {
	item int // the item of issue 8
	name string
	run  func(t *testing.T) error
}

func TestAttacks(t *testing.T) {
	runAttacks(t, attacks)
}

// runAttacks runs each row as a subtest named by its item and behaviour.
func runAttacks(t *testing.T, rows []attack) {
	for _, a := range rows {
		t.Run(fmt.Sprintf("%02d %s", a.item, a.name), func(t *testing.T) {
			if err := a.run(t); err != nil {
				t.Error(err)
			}
		})
	}
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// fullNode is a snapshot of a node at 95% image fs usage with old, unused
// images: a space pass runs.
func fullNode(images ...engine.Image) engine.Snapshot {
	s := engine.Snapshot{APIVersion: engine.APIVersion, Kind: engine.KindSnapshot, TakenAt: t0,
		Runtime: engine.RuntimeInfo{Name: "containerd", Version: "2.2.1"},
		ImageFs: engine.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: 1000, AvailableBytes: 50},
		Images:  images}
	for i, im := range images {
		lu := t0.Add(-time.Duration(len(images)-i) * time.Hour)
		s.ImageRecords = append(s.ImageRecords, engine.ImageRecord{ID: im.ID, FirstDetected: t0.Add(-48 * time.Hour), LastUsed: &lu})
	}
	return s
}

func removes(p engine.Plan, id string) bool {
	for _, r := range p.ImageGC.Remove {
		if r.ID == id {
			return true
		}
	}
	return false
}

const pauseDigest = "sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097"

var attacks = []attack{
	{1, "a sandbox image configured as name:tag@digest, listed as name@digest only, is never planned for removal", func(t *testing.T) error {
		s := fullNode(engine.Image{ID: "sha256:pause", SizeBytes: 100, RepoDigests: []string{"registry.k8s.io/pause@" + pauseDigest}},
			engine.Image{ID: "sha256:app", SizeBytes: 100, RepoTags: []string{"docker.io/library/app:1"}})
		s.Runtime.SandboxImages = []string{"registry.k8s.io/pause:3.9@" + pauseDigest}
		if p := engine.PlanPass(s, engine.DefaultPolicy(), engine.PassReclaimAll, t0); removes(p, "sha256:pause") {
			return errors.New("reclaim-all plans to remove the sandbox image")
		}
		return nil
	}},
	{1, "a sandbox image named by its ID as 64 hex digits, without sha256:, is never planned for removal", func(t *testing.T) error {
		s := fullNode(engine.Image{ID: pauseDigest, SizeBytes: 100, RepoTags: []string{"registry.k8s.io/pause:3.9"}},
			engine.Image{ID: "sha256:app", SizeBytes: 100, RepoTags: []string{"docker.io/library/app:1"}})
		s.Runtime.SandboxImages = []string{strings.TrimPrefix(pauseDigest, "sha256:")}
		if p := engine.PlanPass(s, engine.DefaultPolicy(), engine.PassReclaimAll, t0); removes(p, pauseDigest) {
			return errors.New("reclaim-all plans to remove the sandbox image")
		}
		return nil
	}},
	{2, "READY sandboxes on another pause image, listed after 35 others, are all read", func(t *testing.T) error {
		srv := &critest.Sandboxes{Config: `{"sandboxImage":"registry.k8s.io/pause:3.9"}`, Images: map[string]string{}}
		for i := range 40 {
			id := fmt.Sprintf("sb%02d", i)
			srv.IDs = append(srv.IDs, id)
			srv.Images[id] = map[bool]string{true: "registry.k8s.io/pause:3.6", false: "registry.k8s.io/pause:3.9"}[i >= 35]
		}
		c, err := cri.Dial(context.Background(), critest.Serve(t, srv), cri.Options{})
		if err != nil {
			return err
		}
		defer c.Close()
		info, err := c.Info(context.Background())
		if err != nil {
			return err
		}
		if !engine.IsSandboxImage(engine.Image{ID: "sha256:p36", RepoTags: []string{"registry.k8s.io/pause:3.6"}}, info.SandboxImages) {
			return fmt.Errorf("pause:3.6, run by 5 READY sandboxes, is not a sandbox image: %v", info.SandboxImages)
		}
		return nil
	}},
	{3, "a container in state 7 and a sandbox in state 2 are never stopped or removed", func(t *testing.T) error {
		s := fullNode()
		s.Containers = []engine.Container{{ID: "c7", PodSandboxID: "sb2", PodUID: "p", Name: "app", State: engine.ContainerStateOther(7), CreatedAt: t0.Add(-time.Hour)}}
		s.Sandboxes = []engine.Sandbox{{ID: "sb2", PodUID: "p", State: engine.SandboxStateOther(2), CreatedAt: t0.Add(-time.Hour)},
			{ID: "sbnew", PodUID: "p", State: engine.SandboxReady, CreatedAt: t0}}
		s.PodSource = engine.PodSource{Ready: true, RemovablePodUIDs: []string{"p"}}
		pol := engine.DefaultPolicy()
		pol.Container.MaxPerPodContainer, pol.Container.MaxContainers = 0, 0
		p := engine.PlanPass(s, pol, engine.PassFull, t0)
		if len(p.ContainerGC.Remove) > 0 || len(p.SandboxGC.Remove) > 0 {
			return fmt.Errorf("planned %+v and %+v", p.ContainerGC.Remove, p.SandboxGC.Remove)
		}
		return nil
	}},
	{3, "a pod whose only sandbox is in state 2 is not terminated: reclaim-all keeps its dead container and its log directory", func(t *testing.T) error {
		s := fullNode()
		s.Sandboxes = []engine.Sandbox{{ID: "sb2", PodUID: "p", State: engine.SandboxStateOther(2), CreatedAt: t0.Add(-time.Hour)}}
		s.Containers = []engine.Container{{ID: "c", PodSandboxID: "sb2", PodUID: "p", Name: "app", State: engine.ContainerExited, CreatedAt: t0.Add(-time.Hour)}}
		s.PodSource = engine.PodSource{Ready: true}
		s.Logs = &engine.LogFiles{PodLogsDir: engine.DefaultPodLogsDir, PodDirs: []string{"ns_web_p"}}
		p := engine.PlanPass(s, engine.DefaultPolicy(), engine.PassReclaimAll, t0)
		if len(p.ContainerGC.Remove) > 0 || len(p.SandboxGC.Remove) > 0 || len(p.LogGC.Remove) > 0 {
			return fmt.Errorf("planned %+v, %+v and %+v", p.ContainerGC.Remove, p.SandboxGC.Remove, p.LogGC.Remove)
		}
		return nil
	}},
	{4, "a wrapped (negative) image size does not make the pass remove every image", func(t *testing.T) error {
		s := fullNode(engine.Image{ID: "wrapped", SizeBytes: -1 << 62},
			engine.Image{ID: "a", SizeBytes: 100}, engine.Image{ID: "b", SizeBytes: 100}, engine.Image{ID: "c", SizeBytes: 100})
		p := engine.PlanPass(s, engine.DefaultPolicy(), engine.PassImages, t0)
		if removes(p, "wrapped") || removes(p, "c") || p.ImageGC.BytesFreed < 0 {
			return fmt.Errorf("removals %+v, bytes freed %d", p.ImageGC.Remove, p.ImageGC.BytesFreed)
		}
		return nil
	}},
	{5, "plan on a node without a state dir does not create it", func(t *testing.T) error {
		state := filepath.Join(t.TempDir(), "nodegc")
		_, ep := startSimnode(t)
		if r := nodegc(t, "plan", "--simulated", "--runtime-endpoint", ep, "--state-dir", state); r.code != 0 {
			return fmt.Errorf("plan: exit %d: %s", r.code, r.stderr)
		}
		if _, err := os.Lstat(state); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("plan created %s (%v)", state, err)
		}
		return nil
	}},
	{5, "plan, snapshot and gc --dry-run leave a shared 1777 state dir's mode and contents alone", func(t *testing.T) error {
		state := t.TempDir()
		os.Chmod(state, 0o777|os.ModeSticky)
		_, ep := startSimnode(t)
		for _, args := range [][]string{{"plan"}, {"snapshot"}, {"gc", "--dry-run"}} {
			r := nodegc(t, append(args, "--simulated", "--runtime-endpoint", ep, "--state-dir", state)...)
			fi, _ := os.Stat(state)
			ents, _ := os.ReadDir(state)
			if r.code != 0 || fi.Mode()&os.ModePerm != 0o777 || fi.Mode()&os.ModeSticky == 0 || len(ents) != 0 {
				return fmt.Errorf("%s: exit %d, mode %v, %d entries (%s)", args[0], r.code, fi.Mode(), len(ents), r.stderr)
			}
		}
		return nil
	}},
	{6, "a journal.jsonl symlink planted in the state dir is not followed", func(t *testing.T) error {
		state, victim := t.TempDir(), filepath.Join(t.TempDir(), "victim")
		os.WriteFile(victim, []byte("precious\n"), 0o644)
		os.Symlink(victim, filepath.Join(state, "journal.jsonl"))
		_, ep := startSimnode(t)
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
			return fmt.Errorf("the symlink's target was written: %q", b)
		}
		if r.code != 2 || !strings.Contains(r.stderr, "symlink") {
			return fmt.Errorf("exit %d, stderr %q; want 2 and a line about the symlink", r.code, r.stderr)
		}
		return nil
	}},
	{6, "a state dir owned by another user is refused, not used or chmodded", func(t *testing.T) error {
		if os.Geteuid() != 0 {
			t.Skip("chown needs root")
		}
		state := t.TempDir()
		os.Chown(state, 65534, 65534)
		os.WriteFile(filepath.Join(state, "image-records.json"), []byte(`{"kind":"ImageRecords","records":[]}`), 0o644)
		node, ep := startSimnode(t)
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		fi, _ := os.Stat(state)
		if r.code != 2 || !strings.Contains(r.stderr, "owned by uid 65534") || len(node.MutatingCalls()) > 0 || fi.Mode().Perm() != 0o755 && fi.Mode().Perm() != 0o700 {
			return fmt.Errorf("exit %d, stderr %q, mutating %v, mode %v", r.code, r.stderr, node.MutatingCalls(), fi.Mode())
		}
		return nil
	}},
	{6, "a group- or world-writable state dir is refused", func(t *testing.T) error {
		state := t.TempDir()
		os.Chmod(state, 0o777)
		node, ep := startSimnode(t)
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		if r.code != 2 || !strings.Contains(r.stderr, "writable by group or others") || len(node.MutatingCalls()) > 0 {
			return fmt.Errorf("exit %d, stderr %q, mutating %v", r.code, r.stderr, node.MutatingCalls())
		}
		return nil
	}},
	{6, "a FIFO as the records file does not hang plan or gc", func(t *testing.T) error {
		state := t.TempDir()
		os.Chmod(state, 0o700)
		if err := syscall.Mkfifo(filepath.Join(state, "image-records.json"), 0o600); err != nil {
			return err
		}
		_, ep := startSimnode(t)
		for _, args := range [][]string{{"plan"}, {"gc", "--reclaim-all", "--yes"}} {
			r := nodegc(t, append(args, "--simulated", "--runtime-endpoint", ep, "--state-dir", state)...)
			if r.hung {
				return fmt.Errorf("%s hung on the FIFO", args[0])
			}
			if !strings.Contains(r.stderr, "not a regular file") {
				return fmt.Errorf("%s: exit %d, stderr %q; want it to name the FIFO", args[0], r.code, r.stderr)
			}
		}
		return nil
	}},
	{7, "a state dir too full for the journal stops the pass before any removal", func(t *testing.T) error {
		if os.Geteuid() != 0 {
			t.Skip("mounting a small tmpfs needs root")
		}
		state := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", state).CombinedOutput(); err != nil {
			return fmt.Errorf("mount: %v: %s", err, out)
		}
		defer exec.Command("umount", "-l", state).Run()
		filler, _ := os.Create(filepath.Join(state, "filler"))
		filler.Write(bytes.Repeat([]byte{0}, 200<<10))
		filler.Close()
		node, ep := startSimnode(t)
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		if r.code != 1 || len(node.MutatingCalls()) > 0 || !strings.Contains(r.stderr, "free") {
			return fmt.Errorf("exit %d, stderr %q, mutating calls %v; want exit 1 and nothing removed", r.code, r.stderr, node.MutatingCalls())
		}
		return nil
	}},
	{8, "a second process that can delete is refused while one holds the state dir", func(t *testing.T) error {
		state := t.TempDir()
		node, ep := startSimnode(t)
		c, err := cri.Dial(context.Background(), ep, cri.Options{})
		if err != nil {
			return err
		}
		defer c.Close()
		e, err := engine.New(engine.Options{Reader: c, Remover: c, Policy: engine.DefaultPolicy(), StateDir: state})
		if err != nil {
			return err
		}
		defer e.Close()
		before := len(node.MutatingCalls())
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		want := fmt.Sprintf("another nodegc (pid %d) is using %s; stop it or use --read-only", os.Getpid(), state)
		if r.code != 2 || !strings.Contains(r.stderr, want) || len(node.MutatingCalls()) != before {
			return fmt.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, want)
		}
		if r := nodegc(t, "plan", "--simulated", "--runtime-endpoint", ep, "--state-dir", state); r.code != 0 {
			return fmt.Errorf("a read-only plan beside it: exit %d, %s", r.code, r.stderr)
		}
		return nil
	}},
	{9, "the dashboard ends with its terminal (the pty hangs up) and removes the demo's temp dir", func(t *testing.T) error {
		tmp, err := os.MkdirTemp("", "ngc-atk-hup-") // short: the demo's socket path must fit
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		term, err := proctest.OpenPty(100, 30)
		if err != nil {
			return err
		}
		defer term.Close()
		cmd := exec.Command(binary(t), "--demo", "--demo-seed", "1", "--paused")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "TERM=xterm-256color")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term.Slave, term.Slave, term.Slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			return err
		}
		term.Slave.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Bounds on a hang, not on speed.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for !(drawn(term) && stateDemoDirs(tmp) == 1) {
			select {
			case err := <-exited:
				return fmt.Errorf("the dashboard ended before the hangup: %v: %q", err, term.Output())
			case <-ctx.Done():
				cmd.Process.Kill()
				<-exited
				return fmt.Errorf("the dashboard never started: %q", term.Output())
			case <-time.After(50 * time.Millisecond):
			}
		}
		term.Master.Close() // the terminal goes away: an SSH drop, a closed tmux session
		select {
		case <-exited:
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return errors.New("the dashboard still ran after its terminal went away")
		}
		if n := stateDemoDirs(tmp); n != 0 {
			return fmt.Errorf("the dashboard left %d nodegc-demo-* dirs behind", n)
		}
		return nil
	}},
	{10, "SIGTERM during a pass stops it after the item in flight, every removal journalled", func(t *testing.T) error {
		state := t.TempDir()
		// More of each kind than the default pool has in flight, so
		// that the signal finds removals not yet started.
		opts := attackNode()
		opts.Images, opts.DeadPerContainer = 4*executor.DefaultParallel, 4*executor.DefaultParallel
		node, ep := simnode.ServeTemp(t, opts)
		node.SetLatency(150 * time.Millisecond)
		cmd := exec.Command(binary(t), "gc", "--reclaim-all", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		// Signal once the first removal has happened.
		deadline := time.Now().Add(30 * time.Second)
		for len(node.MutatingCalls()) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		node.SetLatency(0)
		removed := 0
		for _, c := range node.MutatingCalls() {
			if strings.Contains(c, "Remove") {
				removed++
			}
		}
		js, jerr := engine.ReadJournal(state)
		if jerr != nil {
			return jerr
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "left undone") {
			return fmt.Errorf("exit %v, stderr %q; want exit 1 saying how many were left undone", err, stderr.String())
		}
		if removed == 0 || len(js) != removed {
			return fmt.Errorf("%d removals, %d journal lines: every removal must be journalled", removed, len(js))
		}
		return nil
	}},
	{11, "a log path nested under a symlinked subdirectory of the links dir is not removed", func(t *testing.T) error {
		root := t.TempDir()
		links, elsewhere := filepath.Join(root, "containers"), filepath.Join(root, "elsewhere")
		os.MkdirAll(links, 0o755)
		os.MkdirAll(elsewhere, 0o755)
		os.Symlink("/nowhere", filepath.Join(elsewhere, "p_ns_c-dead.log"))
		os.Symlink(elsewhere, filepath.Join(links, "sub"))
		node, ep := startSimnode(t)
		_ = node
		c, err := cri.Dial(context.Background(), ep, cri.Options{})
		if err != nil {
			return err
		}
		defer c.Close()
		e, err := engine.New(engine.Options{Reader: c, Remover: c, Policy: engine.DefaultPolicy(), StateDir: t.TempDir(), ContainerLogsDir: links})
		if err != nil {
			return err
		}
		defer e.Close()
		r, err := e.Apply(context.Background(), engine.Plan{EvaluatedAt: e.Now(), Pass: engine.PassContainers,
			LogGC: engine.LogPlan{Remove: []engine.LogRemoval{{Path: filepath.Join(links, "sub", "p_ns_c-dead.log"), Reason: engine.LogDangling}}}})
		if err != nil {
			return err
		}
		if _, err := os.Lstat(filepath.Join(elsewhere, "p_ns_c-dead.log")); err != nil || r.Items[0].Outcome == engine.OutcomeRemoved {
			return fmt.Errorf("removed through the symlinked subdir: %+v", r.Items)
		}
		return nil
	}},
	{11, "a plan with a zero or a future evaluation time is refused", func(t *testing.T) error {
		_, ep := startSimnode(t)
		c, err := cri.Dial(context.Background(), ep, cri.Options{})
		if err != nil {
			return err
		}
		defer c.Close()
		e, err := engine.New(engine.Options{Reader: c, Remover: c, Policy: engine.DefaultPolicy(), StateDir: t.TempDir()})
		if err != nil {
			return err
		}
		defer e.Close()
		for _, at := range []time.Time{{}, e.Now().Add(time.Hour)} {
			if _, err := e.Apply(context.Background(), engine.Plan{EvaluatedAt: at}); !errors.Is(err, engine.ErrStalePlan) {
				return fmt.Errorf("Apply at %v = %v, want ErrStalePlan", at, err)
			}
		}
		return nil
	}},
	{12, "simnode rejects counts it cannot hold and a negative step", func(t *testing.T) error {
		for _, args := range [][]string{{"--images", "999999999999999"}, {"--step", "-1s"}} {
			r := nodegc(t, append([]string{"simnode", "--listen", "unix:///tmp/nodegc-attack-never.sock"}, args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, args[0]) {
				return fmt.Errorf("simnode %v: exit %d, stderr %q; want 2 naming the flag", args, r.code, r.stderr)
			}
		}
		return nil
	}},
	{13, "the container decoder's fuzz corpus holds real ListContainers responses", func(t *testing.T) error {
		dir := filepath.Join("..", "..", "engine", "cri", "testdata", "fuzz", "FuzzDecodeContainers")
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) < 2 {
			return fmt.Errorf("seed corpus %s: %d entries (%v); want responses from simnode and the real containerd", dir, len(ents), err)
		}
		return nil
	}},
}

// run is a finished nodegc process.
type run struct {
	code           int
	stdout, stderr string
	hung           bool
}

var (
	buildOnce sync.Once
	bin       string
	buildErr  error
)

// binary builds nodegc once per test binary.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nodegc-attacks-")
		if err != nil {
			buildErr = err
			return
		}
		bin = filepath.Join(dir, "nodegc")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/nodegc/nodegc/cmd/nodegc").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// TestMain gives the engines the rows start a runtime lock dir of the
// test process's (realnode.PrivateRuntimeLocks) and removes it and the
// built binary after.
func TestMain(m *testing.M) {
	realnode.Main(m, func() {
		if bin != "" {
			os.RemoveAll(filepath.Dir(bin))
		}
	})
}

// nodegc runs the binary with no terminal, bounded by a generous timeout
// (hung is set when it had to be killed: a hang is a finding, not a slow
// machine).
func nodegc(t *testing.T, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return finish(ctx, exec.CommandContext(ctx, binary(t), args...))
}

// finish runs cmd, made with ctx, to its end and returns how it ended:
// hung is set when ctx had to end it.
func finish(ctx context.Context, cmd *exec.Cmd) run {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{stdout: stdout.String(), stderr: stderr.String(), hung: ctx.Err() != nil}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		r.code = -1
	}
	return r
}

// startSimnode serves a small simulated node whose image fs is above the
// high threshold, with old unused images, until the test ends.
func startSimnode(t *testing.T) (*simnode.Node, string) {
	t.Helper()
	return simnode.ServeTemp(t, attackNode())
}

// attackNode is the simulated node most rows attack: a few of each kind,
// on an image filesystem at 95%.
func attackNode() simnode.Options {
	return simnode.Options{Seed: 7, Images: 8, Pods: 3, DeadPerContainer: 2, DeletedPods: 1,
		MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20, InitialUsagePercent: 95, Start: time.Now().Add(-24 * time.Hour)}
}

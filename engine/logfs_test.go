package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/state"
)

func TestCheckPodLogsDirRefusesSystemDirectories(t *testing.T) {
	cases := []struct {
		dir  string
		want bool // accepted
	}{
		{"/var/log/pods", true},
		{"/data/logs/pods", true},
		{"/var/lib/kubelet/pod-logs", true},
		{"/", false},
		{"/etc", false},
		{"/etc/", false},
		{"/etc/kubernetes/logs", false},
		{"/usr/local/pods", false},
		{"/lib64", false},
		{"/libexec/x", false},
		{"/boot", false},
		{"/proc/self", false},
		{"/root", false},
		{"/var", false},
		{"/var/lib", false},
		{"/var/log", false},
		{"/home", false},
		{"/tmp", false},
		{"var/log/pods", false},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			if err := CheckPodLogsDir(tc.dir); (err == nil) != tc.want {
				t.Errorf("CheckPodLogsDir(%q) = %v, want accepted %v", tc.dir, err, tc.want)
			}
		})
	}
}

func TestCheckPodLogsDirOnDiskRefusesWhatOthersCanWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	const nobody = 65534
	cases := []struct {
		name  string
		setup func(t *testing.T, root string) string
		want  string // "" is accepted
	}{
		{"a root-owned 0755 directory is accepted", func(t *testing.T, root string) string {
			return mkdir(t, root, "pods", 0o755)
		}, ""},
		{"a missing directory is accepted: there is nothing to collect", func(t *testing.T, root string) string {
			return filepath.Join(root, "missing", "pods")
		}, ""},
		{"a directory owned by another user is refused", func(t *testing.T, root string) string {
			d := mkdir(t, root, "pods", 0o755)
			chown(t, d, nobody)
			return d
		}, "owned by uid 65534"},
		{"a group-writable directory is refused", func(t *testing.T, root string) string {
			return mkdir(t, root, "pods", 0o775)
		}, "writable by group or others"},
		{"a world-writable sticky directory is refused", func(t *testing.T, root string) string {
			return mkdir(t, root, "pods", 0o1777)
		}, "writable by group or others"},
		{"a directory under one owned by another user is refused", func(t *testing.T, root string) string {
			up := mkdir(t, root, "up", 0o755)
			chown(t, up, nobody)
			return mkdir(t, up, "pods", 0o755)
		}, "owned by uid 65534"},
		{"a directory reached through a symlink is refused", func(t *testing.T, root string) string {
			d := mkdir(t, root, "real", 0o755)
			if err := os.Symlink(d, filepath.Join(root, "link")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(root, "link")
		}, "symlink is never followed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t, t.TempDir())
			err := CheckPodLogsDirOnDisk(dir)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckPodLogsDirOnDisk(%s) = %v, want %q", dir, err, tc.want)
			}
		})
	}
}

func TestNewRefusesAPodLogsDirAnotherUserOwns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a directory to another user needs root")
	}
	rt := newFakeRuntime()
	dir := mkdir(t, t.TempDir(), "pods", 0o755)
	chown(t, dir, 65534)
	p := DefaultPolicy()
	p.PodLogsDir = dir
	_, err := New(Options{Reader: rt, Remover: rt, Statfs: rt.Statfs, Policy: p, StateDir: t.TempDir()})
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Field != "pod-logs-dir" {
		t.Errorf("New = %v, want a PolicyError naming pod-logs-dir", err)
	}
	ro, err := New(Options{Reader: rt, Statfs: rt.Statfs, Policy: p})
	if err != nil {
		t.Errorf("a read-only engine refused it: %v", err)
	} else {
		ro.Close()
	}
}

func mkdir(t *testing.T, parent, name string, mode os.FileMode) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, mode); err != nil {
		t.Fatal(err)
	}
	return d
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("log"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// logNode is a pod logs dir and a links dir under a temp dir, and a file
// outside both.
type logNode struct {
	root, pods, links, outside string
}

func newLogNode(t *testing.T) logNode {
	root := t.TempDir()
	n := logNode{root: root, pods: filepath.Join(root, "pods"), links: filepath.Join(root, "containers"), outside: filepath.Join(root, "outside", "secret")}
	for _, d := range []string{n.pods, n.links} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, n.outside)
	return n
}

func (n logNode) engine(t *testing.T, rt Runtime) *Engine {
	t.Helper()
	p := DefaultPolicy()
	p.PodLogsDir = n.pods
	e, err := New(Options{Reader: rt, Remover: rt, Policy: p, StateDir: t.TempDir(), ContainerLogsDir: n.links, Now: func() time.Time { return execNow }, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestApplyRemovesOnlyContainerLogsInTheKubeletsLayout(t *testing.T) {
	cases := []struct {
		name     string
		logPath  func(n logNode) string
		setup    func(t *testing.T, n logNode)
		removed  []string // under n.root
		kept     []string
		outcome  Outcome // of the log item; "" when there is none
		detailRe string
	}{
		{
			name:    "a log in the layout goes, with its rotated copies",
			logPath: func(n logNode) string { return filepath.Join(n.pods, "ns_web_uid1", "app", "0.log") },
			setup: func(t *testing.T, n logNode) {
				for _, f := range []string{"0.log", "0.log.20260101-000000", "0.log.20260101-000000.gz", "1.log", "01.log"} {
					writeFile(t, filepath.Join(n.pods, "ns_web_uid1", "app", f))
				}
			},
			removed: []string{"pods/ns_web_uid1/app/0.log", "pods/ns_web_uid1/app/0.log.20260101-000000", "pods/ns_web_uid1/app/0.log.20260101-000000.gz"},
			kept:    []string{"pods/ns_web_uid1/app/1.log", "pods/ns_web_uid1/app/01.log"},
			outcome: OutcomeRemoved,
		},
		{
			name:    "a file directly in the pod logs dir is outside the layout and stays",
			logPath: func(n logNode) string { return filepath.Join(n.pods, "shadow") },
			setup:   func(t *testing.T, n logNode) { writeFile(t, filepath.Join(n.pods, "shadow")) },
			kept:    []string{"pods/shadow"},
			outcome: OutcomeSkipped, detailRe: "layout",
		},
		{
			name:    "a file outside the pod logs dir stays",
			logPath: func(n logNode) string { return n.outside },
			kept:    []string{"outside/secret"},
			outcome: OutcomeSkipped, detailRe: "layout",
		},
		{
			name:    "another pod's log stays",
			logPath: func(n logNode) string { return filepath.Join(n.pods, "ns_other_uid9", "app", "0.log") },
			setup:   func(t *testing.T, n logNode) { writeFile(t, filepath.Join(n.pods, "ns_other_uid9", "app", "0.log")) },
			kept:    []string{"pods/ns_other_uid9/app/0.log"},
			outcome: OutcomeSkipped, detailRe: "own pod",
		},
		{
			name:    "a container directory that is a symlink is not followed",
			logPath: func(n logNode) string { return filepath.Join(n.pods, "ns_web_uid1", "app", "0.log") },
			setup: func(t *testing.T, n logNode) {
				writeFile(t, filepath.Join(n.root, "outside", "0.log"))
				if err := os.MkdirAll(filepath.Join(n.pods, "ns_web_uid1"), 0o755); err != nil {
					t.Fatal(err)
				}
				symlink(t, filepath.Join(n.root, "outside"), filepath.Join(n.pods, "ns_web_uid1", "app"))
			},
			kept:    []string{"outside/0.log"},
			outcome: OutcomeFailed,
		},
		{
			name:    "a log that is a symlink is not followed",
			logPath: func(n logNode) string { return filepath.Join(n.pods, "ns_web_uid1", "app", "0.log") },
			setup: func(t *testing.T, n logNode) {
				if err := os.MkdirAll(filepath.Join(n.pods, "ns_web_uid1", "app"), 0o755); err != nil {
					t.Fatal(err)
				}
				symlink(t, n.outside, filepath.Join(n.pods, "ns_web_uid1", "app", "0.log"))
			},
			kept:    []string{"outside/secret", "pods/ns_web_uid1/app/0.log"},
			outcome: OutcomeGone,
		},
		{
			name:    "a relative log path is no log nodegc knows of",
			logPath: func(logNode) string { return "app/0.log" },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newLogNode(t)
			if tc.setup != nil {
				tc.setup(t, n)
			}
			rt := newFakeRuntime()
			rt.Sandboxes["s1"] = Sandbox{ID: "s1", PodName: "web", PodNamespace: "ns", PodUID: "uid1", State: SandboxNotReady}
			rt.Containers["c1"] = Container{ID: "c1", Name: "app", PodSandboxID: "s1", PodUID: "uid1", State: ContainerExited, LogPath: tc.logPath(n)}
			e := n.engine(t, rt)
			r, err := e.Apply(context.Background(), Plan{Pass: PassContainers, EvaluatedAt: execNow, ContainerGC: ContainerPlan{Remove: []ContainerRemoval{
				{ID: "c1", PodUID: "uid1", Name: "app", Reason: RemovePerContainerLimit, PodName: "web", PodNamespace: "ns"}}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.removed {
				if exists(filepath.Join(n.root, p)) {
					t.Errorf("%s still there", p)
				}
			}
			for _, p := range tc.kept {
				if !exists(filepath.Join(n.root, p)) {
					t.Errorf("%s was removed", p)
				}
			}
			var log *ItemResult
			for i, it := range r.Items {
				if it.Kind == ItemLog && it.ID == tc.logPath(n) {
					log = &r.Items[i]
				}
			}
			switch {
			case tc.outcome == "" && log != nil:
				t.Errorf("log item %+v, want none", *log)
			case tc.outcome != "" && (log == nil || log.Outcome != tc.outcome || !strings.Contains(log.Detail, tc.detailRe)):
				t.Errorf("log item %+v, want %s (%q)", log, tc.outcome, tc.detailRe)
			}
		})
	}
}

// orderRuntime checks, at each RemoveContainer, that the container's log
// is already gone.
type orderRuntime struct {
	*fakeRuntime
	log       string
	logBefore bool
}

func (o *orderRuntime) RemoveContainer(ctx context.Context, id string) error {
	o.logBefore = !exists(o.log)
	return o.fakeRuntime.RemoveContainer(ctx, id)
}

func TestApplyRemovesAContainersLogBeforeTheContainerAndJournalsBoth(t *testing.T) {
	n := newLogNode(t)
	logFile := filepath.Join(n.pods, "ns_web_uid1", "app", "0.log")
	writeFile(t, logFile)
	symlink(t, logFile, filepath.Join(n.links, "web_ns_app-c1.log"))
	rt := &orderRuntime{fakeRuntime: newFakeRuntime(), log: logFile}
	rt.Sandboxes["s1"] = Sandbox{ID: "s1", PodName: "web", PodNamespace: "ns", PodUID: "uid1", State: SandboxNotReady}
	rt.Containers["c1"] = Container{ID: "c1", Name: "app", PodSandboxID: "s1", PodUID: "uid1", State: ContainerExited, LogPath: logFile}
	e := n.engine(t, rt)
	r, err := e.Apply(context.Background(), Plan{Pass: PassContainers, EvaluatedAt: execNow, ContainerGC: ContainerPlan{Remove: []ContainerRemoval{
		{ID: "c1", PodUID: "uid1", Name: "app", Reason: RemovePerContainerLimit, PodName: "web", PodNamespace: "ns"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !rt.logBefore || r.Count(OutcomeRemoved) != 3 {
		t.Errorf("log gone at RemoveContainer: %v; items %+v: want the log and its link removed first", rt.logBefore, r.Items)
	}
	lines, err := ReadJournalLines(e.o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, string(l.Op)+" "+string(l.Kind)+" "+filepath.Base(l.ID))
	}
	want := []string{"intent container c1", "intent log 0.log", "removed log 0.log", "intent log web_ns_app-c1.log", "removed log web_ns_app-c1.log", "removed container c1"}
	if !slices.Equal(got, want) {
		t.Errorf("journal %q\nwant    %q", got, want)
	}
	// The logs go after the container's started line: nothing of a
	// removal is done before it is on file.
	all, err := state.ReadJournalAll(e.o.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, l := range all {
		if l.Op == JournalStarted || l.Kind == ItemLog && l.Op == JournalIntent {
			got = append(got, string(l.Op)+" "+string(l.Kind)+" "+filepath.Base(l.ID))
		}
	}
	want = []string{"started container c1", "intent log 0.log", "started log 0.log", "intent log web_ns_app-c1.log", "started log web_ns_app-c1.log"}
	if !slices.Equal(got, want) {
		t.Errorf("journal's started lines and log intents %q\nwant %q", got, want)
	}
}

// The kubelet's removeOldestN kills an UNKNOWN container, then its
// removeContainer removes the logs and then the container; a kill that
// fails leaves both (pkg/kubelet/kuberuntime/kuberuntime_gc.go,
// v1.36.3). Each call follows the container's started line.
func TestAnUnknownContainerIsKilledThenItsLogsGoThenIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stopErr  error
		want     []string
		outcome  Outcome
		logStays bool
	}{
		{"stopped, then its log, then the container", nil,
			[]string{"StopContainer started=true log=true", "RemoveContainer started=true log=false"}, OutcomeRemoved, false},
		{"a kill that fails leaves the log and the container", errors.New("shim gone"),
			[]string{"StopContainer started=true log=true"}, OutcomeFailed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newLogNode(t)
			logFile := filepath.Join(n.pods, "ns_web_uid1", "app", "0.log")
			writeFile(t, logFile)
			rt := newFakeRuntime()
			rt.Containers["c1"] = Container{ID: "c1", Name: "app", PodSandboxID: "s1", PodUID: "uid1", State: ContainerUnknown, LogPath: logFile}
			if tc.stopErr != nil {
				rt.Fail["StopContainer c1"] = tc.stopErr
			}
			e := n.engine(t, rt)
			var got []string
			rt.Before = func(method, id string) {
				got = append(got, fmt.Sprintf("%s started=%v log=%v", method, startedOnFile(e.o.StateDir, id), exists(logFile)))
			}
			r, err := e.Apply(context.Background(), Plan{Pass: PassContainers, EvaluatedAt: execNow, ContainerGC: ContainerPlan{Remove: []ContainerRemoval{
				{ID: "c1", PodUID: "uid1", Name: "app", Reason: RemovePerContainerLimit, PodName: "web", PodNamespace: "ns", State: ContainerUnknown}}}})
			if err != nil {
				t.Fatal(err)
			}
			var mutating []string
			for _, c := range got {
				if m, _, _ := strings.Cut(c, " "); m == "StopContainer" || m == "RemoveContainer" {
					mutating = append(mutating, c)
				}
			}
			if !slices.Equal(mutating, tc.want) {
				t.Errorf("calls %q\nwant  %q", mutating, tc.want)
			}
			if got := outcomes(r)["c1"]; got != tc.outcome {
				t.Errorf("container %s, want %s: %+v", got, tc.outcome, r.Items)
			}
			if exists(logFile) != tc.logStays {
				t.Errorf("log there: %v, want %v", exists(logFile), tc.logStays)
			}
		})
	}
}

func TestApplyPodLogDirRemovalNeverFollowsASymlinkInside(t *testing.T) {
	n := newLogNode(t)
	pod := filepath.Join(n.pods, "ns_gone_uid1")
	writeFile(t, filepath.Join(pod, "app", "0.log"))
	symlink(t, n.outside, filepath.Join(pod, "app", "1.log"))
	symlink(t, filepath.Dir(n.outside), filepath.Join(pod, "dir"))
	symlink(t, filepath.Dir(n.outside), filepath.Join(pod, "app", "dir"))
	e := n.engine(t, newFakeRuntime())
	r, err := e.Apply(context.Background(), Plan{Pass: PassContainers, EvaluatedAt: execNow, LogGC: LogPlan{Remove: []LogRemoval{{Path: pod, Reason: LogPodRemovable}}}})
	if err != nil {
		t.Fatal(err)
	}
	if exists(pod) || r.Items[0].Outcome != OutcomeRemoved {
		t.Errorf("pod log dir not removed: %+v", r.Items)
	}
	if !exists(n.outside) {
		t.Errorf("%s, a symlink's target outside the pod dir, was removed", n.outside)
	}
}

func TestApplyRemovesTheLinksAPodLogDirRemovalLeavesDangling(t *testing.T) {
	cases := []struct {
		name    string
		podRuns bool
		want    Outcome // of the link
	}{
		{"the link goes after its pod's log dir, in the same pass", false, OutcomeRemoved},
		{"the link of a pod log dir that stays stays", true, OutcomeSkipped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newLogNode(t)
			pod := filepath.Join(n.pods, "ns_gone_uid1")
			writeFile(t, filepath.Join(pod, "app", "0.log"))
			link := filepath.Join(n.links, "gone_ns_app-c1.log")
			symlink(t, filepath.Join(pod, "app", "0.log"), link)
			rt := newFakeRuntime()
			if tc.podRuns {
				rt.Containers["c2"] = Container{ID: "c2", Name: "app", PodUID: "uid1", State: ContainerRunning}
			}
			e := n.engine(t, rt)
			// The link is listed first: the executor still re-checks it
			// only once the pod dirs are gone.
			r, err := e.Apply(context.Background(), Plan{Pass: PassContainers, EvaluatedAt: execNow, LogGC: LogPlan{Remove: []LogRemoval{
				{Path: link, Reason: LogPodDirRemoved}, {Path: pod, Reason: LogPodRemovable}}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := outcomes(r)[link]; got != tc.want {
				t.Errorf("link %s, want %s: %+v", got, tc.want, r.Items)
			}
			if exists(link) != (tc.want != OutcomeRemoved) {
				t.Errorf("link there: %v", exists(link))
			}
		})
	}
}

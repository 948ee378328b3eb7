package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The fixture /proc trees under testdata/proc hold only what findKubelet
// reads: <pid>/cmdline (NUL-separated), <pid>/cwd (a symlink), and for each
// kubelet <pid>/status (uid 0), <pid>/exe (a symlink to /bin/sh, a
// root-owned executable no one else can write, as a kubelet's is),
// <pid>/ns/pid (a symlink named as the kernel names it) and <pid>/root (a
// symlink to /), the same as process 1's, the host's init.
const (
	procSingle  = "testdata/proc/single"  // one kubelet, pid 4242, among other processes
	procTwo     = "testdata/proc/two"     // kubelets 100 and 200
	procNone    = "testdata/proc/none"    // no kubelet
	procBadFlag = "testdata/proc/badflag" // a kubelet, pid 9, with --maximum-dead-containers=lots
)

func TestParseKubeletArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want map[string]string
	}{
		{
			name: "--flag=value and --flag value both give the value",
			args: []string{"--config=/a.yaml", "--root-dir", "/data"},
			want: map[string]string{"config": "/a.yaml", "root-dir": "/data"},
		},
		{
			name: "a flag followed by another flag is a boolean",
			args: []string{"--fail-swap-on", "--kubeconfig", "/k"},
			want: map[string]string{"fail-swap-on": "true", "kubeconfig": "/k"},
		},
		{
			name: "the last occurrence wins, as in pflag",
			args: []string{"--maximum-dead-containers=1", "--maximum-dead-containers", "7"},
			want: map[string]string{"maximum-dead-containers": "7"},
		},
		{
			name: "an empty value after = is kept as empty",
			args: []string{"--hostname-override="},
			want: map[string]string{"hostname-override": ""},
		},
		{
			name: "shorthands and their values are skipped",
			args: []string{"-v", "5", "--root-dir=/r"},
			want: map[string]string{"root-dir": "/r"},
		},
		{
			name: "parsing stops at --",
			args: []string{"--root-dir=/r", "--", "--config=/x"},
			want: map[string]string{"root-dir": "/r"},
		},
		{
			name: "a value that starts with a dash must be written with =",
			args: []string{"--maximum-dead-containers=-1"},
			want: map[string]string{"maximum-dead-containers": "-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseKubeletArgs(tt.args); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFindKubelet(t *testing.T) {
	tests := []struct {
		name     string
		root     string
		pid      int
		wantPID  int    // 0: no kubelet
		wantErr  string // a usage error containing this
		wantFlag map[string]string
	}{
		{
			name:    "the only process whose executable is named kubelet is found among others",
			root:    procSingle,
			wantPID: 4242,
			wantFlag: map[string]string{
				"config":                                "/var/lib/kubelet-cwd/kubelet.yaml",
				"container-runtime-endpoint":            "unix:///run/k3s/containerd.sock",
				"kubeconfig":                            "/etc/kubernetes/kubelet.conf",
				"hostname-override":                     "node-a",
				"root-dir":                              "/data/kubelet",
				"maximum-dead-containers-per-container": "3",
				"maximum-dead-containers":               "4",
				"minimum-container-ttl-duration":        "30s",
				"image-gc-high-threshold":               "91",
			},
		},
		{name: "no kubelet running finds nothing", root: procNone},
		{name: "a missing proc root finds nothing", root: "testdata/proc/missing"},
		{name: "an empty proc root looks for nothing", root: ""},
		{
			name:    "two kubelets are refused, naming both pids and --kubelet-pid",
			root:    procTwo,
			wantErr: "--kubelet-pid: 2 kubelets are running (pids 100, 200); pass --kubelet-pid",
		},
		{name: "--kubelet-pid chooses one of two", root: procTwo, pid: 200, wantPID: 200, wantFlag: map[string]string{"kubeconfig": "/b.conf"}},
		{
			name:    "--kubelet-pid of a process that is not a kubelet is refused",
			root:    procSingle,
			pid:     77,
			wantErr: "--kubelet-pid: process 77 is not a running kubelet",
		},
		{
			name:    "--kubelet-pid of a process that does not exist is refused",
			root:    procSingle,
			pid:     31337,
			wantErr: "--kubelet-pid: process 31337 is not a running kubelet",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := findKubelet(tt.root, tt.pid, t.Logf)
			if tt.wantErr != "" {
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantPID == 0 {
				if k != nil {
					t.Fatalf("found %+v, want none", k)
				}
				return
			}
			if k == nil || k.PID != tt.wantPID {
				t.Fatalf("found %+v, want pid %d", k, tt.wantPID)
			}
			for name, want := range tt.wantFlag {
				if got, ok := k.flag(name); !ok || got != want {
					t.Errorf("--%s = %q (set %v), want %q", name, got, ok, want)
				}
			}
		})
	}
}

func TestKubeletNode(t *testing.T) {
	k, err := findKubelet(procSingle, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  *kubeletConfig
		want kubeletNode
	}{
		{name: "no kubelet gives the default root dir only", cfg: nil, want: kubeletNode{RootDir: "/var/lib/kubelet"}},
		{name: "a config file without a kubelet gives the default root dir only", cfg: &kubeletConfig{Path: "/x"}, want: kubeletNode{RootDir: "/var/lib/kubelet"}},
		{
			name: "the kubelet's command line gives its kubeconfig, hostname override and root dir",
			cfg:  &kubeletConfig{Proc: k},
			want: kubeletNode{PID: 4242, Kubeconfig: "/etc/kubernetes/kubelet.conf", HostnameOverride: "node-a", RootDir: "/data/kubelet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.node(); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolvePolicyKubeletCommandLine(t *testing.T) {
	proc := &kubeletProcess{PID: 4242, Flags: map[string]string{
		flagMaxPerContainer: "3",
		flagMaxContainers:   "4",
		flagMinContainerTTL: "30s",
		flagHighThreshold:   "91",
		flagMinImageTTL:     "5m",
		kubeletFlagConfig:   "/etc/kubelet.yaml",
		kubeletFlagRootDir:  "/data",
	}}
	const fromCmdline = "kubelet command line (pid 4242)"
	file := &kubeletConfig{
		Path:                        "/etc/kubelet.yaml",
		ImageGCHighThresholdPercent: ptr(88),
		ImageGCLowThresholdPercent:  ptr(70),
		Proc:                        proc,
	}
	tests := []struct {
		name       string
		flags      policyFlags
		cfg        *kubeletConfig
		setting    string
		wantValue  string
		wantSource string
	}{
		{name: "the kubelet's --maximum-dead-containers-per-container applies", cfg: file, setting: flagMaxPerContainer, wantValue: "3", wantSource: fromCmdline},
		{name: "the kubelet's --maximum-dead-containers applies", cfg: file, setting: flagMaxContainers, wantValue: "4", wantSource: fromCmdline},
		{name: "the kubelet's --minimum-container-ttl-duration applies", cfg: file, setting: flagMinContainerTTL, wantValue: "30s", wantSource: fromCmdline},
		{name: "the kubelet's command line overrides its config file", cfg: file, setting: flagHighThreshold, wantValue: "91", wantSource: fromCmdline},
		{name: "the config file applies where the command line is silent", cfg: file, setting: flagLowThreshold, wantValue: "70", wantSource: "kubelet config /etc/kubelet.yaml"},
		{
			name:       "nodegc's own flag overrides the kubelet's command line",
			cfg:        file,
			flags:      policyFlags{MaxContainers: 9, Changed: map[string]bool{flagMaxContainers: true}},
			setting:    flagMaxContainers,
			wantValue:  "9",
			wantSource: sourceFlag,
		},
		{
			name:       "a kubelet without a config file still gives its command line",
			cfg:        &kubeletConfig{Proc: proc},
			setting:    flagMinImageTTL,
			wantValue:  "5m0s",
			wantSource: fromCmdline,
		},
		{name: "no kubelet: the default", cfg: nil, setting: flagMaxPerContainer, wantValue: "1", wantSource: sourceDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, prov, err := resolvePolicy(tt.flags, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := prov.source(tt.setting)
			if s.Value != tt.wantValue || s.Source != tt.wantSource {
				t.Errorf("%s = %q from %q, want %q from %q", tt.setting, s.Value, s.Source, tt.wantValue, tt.wantSource)
			}
		})
	}

	t.Run("a malformed value on the kubelet's command line is a usage error naming the flag and the pid", func(t *testing.T) {
		k, err := findKubelet(procBadFlag, 0, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = resolvePolicy(policyFlags{}, &kubeletConfig{Proc: k})
		var ue *usageError
		want := `--maximum-dead-containers: "lots" on the kubelet command line (pid 9): not an integer`
		if !errors.As(err, &ue) || err.Error() != want {
			t.Errorf("err = %v, want usage error %q", err, want)
		}
	})
	t.Run("a policy error about a command-line value names the kubelet's command line", func(t *testing.T) {
		bad := &kubeletProcess{PID: 5, Flags: map[string]string{flagHighThreshold: "101"}}
		_, _, err := resolvePolicy(policyFlags{}, &kubeletConfig{Proc: bad})
		if err == nil || !strings.Contains(err.Error(), "(set by the kubelet command line (pid 5))") {
			t.Errorf("err = %v, want it to name the kubelet command line", err)
		}
	})
}

// TestPlanReadsTheKubelet runs the command line against the fixture /proc
// trees: the settings and their sources reach the plan's table, and two
// kubelets are refused before anything is connected to.
func TestPlanReadsTheKubelet(t *testing.T) {
	snap := writeFile(t, "snap.json", snapshotJSON)
	t.Run("plan --from with --kubelet-pid takes the kubelet's container-GC flags and says so", func(t *testing.T) {
		c := newCLI("")
		c.f.ProcRoot = procSingle
		if code := c.run("plan", "--from", snap, "--kubelet-pid", "4242"); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		for _, want := range []string{
			"--maximum-dead-containers-per-container  3              kubelet command line (pid 4242)",
			"--maximum-dead-containers                4              kubelet command line (pid 4242)",
			"--minimum-container-ttl-duration         30s            kubelet command line (pid 4242)",
		} {
			if !strings.Contains(c.out.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, c.out.String())
			}
		}
	})
	t.Run("plan --from without --kubelet-pid reads no kubelet: the snapshot may be another node's", func(t *testing.T) {
		c := newCLI("")
		c.f.ProcRoot = procSingle
		if code := c.run("plan", "--from", snap); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if strings.Contains(c.out.String(), "kubelet command line") {
			t.Errorf("the plan read the kubelet:\n%s", c.out.String())
		}
	})
	t.Run("the kubelet's --config file is read when nodegc has no --kubelet-config", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "kubelet.yaml")
		if err := os.WriteFile(cfg, []byte("kind: KubeletConfiguration\nimageGCLowThresholdPercent: 61\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(dir, "proc")
		fakeProcess(t, root, 12, 0, "/bin/sh", "/usr/bin/kubelet", "--config", "kubelet.yaml")
		if err := os.Symlink(dir, filepath.Join(root, "12", "cwd")); err != nil {
			t.Fatal(err)
		}
		c := newCLI("")
		c.f.ProcRoot = root
		if code := c.run("plan", "--from", snap, "--kubelet-pid", "12"); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		want := "--image-gc-low-threshold                 61             kubelet config " + cfg
		if !strings.Contains(c.out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, c.out.String())
		}
	})
	t.Run("--kubelet-pid -1 reads no kubelet, so two running are no obstacle", func(t *testing.T) {
		c := newCLI("")
		c.f.ProcRoot = procTwo
		code := c.run("plan", "--kubelet-pid", "-1", "--runtime-endpoint", "unix://"+filepath.Join(t.TempDir(), "none.sock"))
		if code != 1 || !strings.Contains(c.err.String(), "runtime unavailable") {
			t.Errorf("exit %d, stderr %q: want 1 for the unreachable runtime, past the kubelet check", code, c.err.String())
		}
	})
	t.Run("--kubelet-pid below -1 is bad input", func(t *testing.T) {
		c := newCLI("")
		c.f.ProcRoot = procTwo
		if code := c.run("plan", "--kubelet-pid", "-2"); code != 2 || !strings.Contains(c.err.String(), "--kubelet-pid: must be a process ID, or -1 for none, got -2") {
			t.Errorf("exit %d, stderr %q", code, c.err.String())
		}
	})
	for _, cmd := range [][]string{{"plan"}, {"gc", "--dry-run"}} {
		t.Run(strings.Join(cmd, " ")+" refuses two kubelets with exit 2 before connecting", func(t *testing.T) {
			c := newCLI("")
			c.f.ProcRoot = procTwo
			args := append(cmd, "--runtime-endpoint", "unix://"+filepath.Join(t.TempDir(), "none.sock"), "--timeout", strconv.Itoa(1)+"s")
			if code := c.run(args...); code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, c.err.String())
			}
			lines := c.stderrLines()
			if len(lines) != 1 || !strings.Contains(lines[0], "pids 100, 200") || !strings.Contains(lines[0], "--kubelet-pid") {
				t.Errorf("stderr %q, want one line naming the pids and --kubelet-pid", lines)
			}
		})
	}
}

// fakeProcess adds process pid to the /proc tree under root: its command
// line, a status whose real and effective uid are uid, and an exe link to
// exe.
func fakeProcess(t *testing.T, root string, pid, uid int, exe string, args ...string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n", filepath.Base(args[0]), uid, uid, uid, uid)
	for name, data := range map[string]string{"cmdline": strings.Join(args, "\x00") + "\x00", "status": status} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(exe, filepath.Join(dir, "exe")); err != nil {
		t.Fatal(err)
	}
	onFakeHost(t, root, 1, hostPIDNS, "/")
	onFakeHost(t, root, pid, hostPIDNS, "/")
}

// hostPIDNS is the fake host's PID namespace.
const hostPIDNS = "4026531836"

// onFakeHost gives process pid of the fake /proc tree at root the PID
// namespace numbered ns and the root directory dir, unless it has them
// already.
func onFakeHost(t *testing.T, root string, pid int, ns, dir string) {
	t.Helper()
	proc := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(filepath.Join(proc, "ns"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{filepath.Join(proc, "ns", "pid"): "pid:[" + ns + "]", filepath.Join(proc, "root"): dir} {
		if err := os.Symlink(to, link); err != nil && !errors.Is(err, os.ErrExist) {
			t.Fatal(err)
		}
	}
}

// fakeProc is a process named kubelet in a fake /proc tree; pidns and
// root, when set, are its PID namespace's number and its root directory
// (a container's), else it has the host's.
type fakeProc struct {
	pid, uid    int
	exe         string
	pidns, root string
}

// TestFindKubeletTrustsOnlyRoot checks that a process is the kubelet only
// when it runs as root from a root-owned executable no one else can write:
// anything else named kubelet is ignored with a warning naming it, and
// never counted as a second kubelet.
func TestFindKubeletTrustsOnlyRoot(t *testing.T) {
	dir := t.TempDir()
	writable := filepath.Join(dir, "kubelet-0777")
	if err := os.WriteFile(writable, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(writable, 0o777)
	containerRoot := t.TempDir() // a container's root directory: not the host's
	tests := []struct {
		name string
		// procs are the processes named kubelet.
		procs    []fakeProc
		pid      int
		wantPID  int
		wantErr  string
		wantWarn string
	}{
		{
			name:     "a non-root process named kubelet is ignored, not counted: the root one is the kubelet",
			procs:    []fakeProc{{10, 0, "/bin/sh", "", ""}, {20, 65534, "/bin/sh", "", ""}},
			wantPID:  10,
			wantWarn: "process 20 is named kubelet but is ignored: it runs as uid 65534 (effective 65534), not root",
		},
		{
			name:     "a non-root process named kubelet alone is no kubelet",
			procs:    []fakeProc{{20, 65534, "/bin/sh", "", ""}},
			wantWarn: "process 20 is named kubelet but is ignored",
		},
		{
			name:     "a root process whose executable others can write is ignored",
			procs:    []fakeProc{{30, 0, writable, "", ""}},
			wantWarn: "process 30 is named kubelet but is ignored: its executable: writable by others (mode 0777)",
		},
		{
			name:     "a root process named kubelet whose root directory is not the host's (root in a hostPID container) is ignored, not counted: the host's is the kubelet",
			procs:    []fakeProc{{10, 0, "/bin/sh", "", ""}, {40, 0, "/bin/sh", "", containerRoot}},
			wantPID:  10,
			wantWarn: "process 40 is named kubelet but is ignored: its root directory is not the host's, as a container's process's is not; if it is this node's kubelet, name it with --kubelet-pid",
		},
		{
			name:     "a root process named kubelet in a PID namespace of its own (root in a container) alone is no kubelet",
			procs:    []fakeProc{{40, 0, "/bin/sh", "4026532999", containerRoot}},
			wantWarn: "process 40 is named kubelet but is ignored: it runs in a PID namespace of its own (pid:[4026532999]; the host's is pid:[4026531836]), as a container's process does",
		},
		{
			name:     "--kubelet-pid names a kubelet that runs in a container of its own (RKE1, Talos): the operator's word is taken",
			procs:    []fakeProc{{10, 0, "/bin/sh", "", ""}, {40, 0, "/bin/sh", "", containerRoot}},
			pid:      40,
			wantPID:  40,
			wantWarn: "process 40 is taken for the kubelet because --kubelet-pid names it, though it does not run on the host (its root directory is not the host's",
		},
		{
			name:    "--kubelet-pid of a non-root process named kubelet is refused, saying why",
			procs:   []fakeProc{{10, 0, "/bin/sh", "", ""}, {20, 65534, "/bin/sh", "", ""}},
			pid:     20,
			wantErr: "--kubelet-pid: process 20 is not the kubelet: it runs as uid 65534 (effective 65534), not root",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, p := range tt.procs {
				if p.pidns != "" || p.root != "" {
					onFakeHost(t, root, p.pid, cmp.Or(p.pidns, hostPIDNS), cmp.Or(p.root, "/"))
				}
				fakeProcess(t, root, p.pid, p.uid, p.exe, "/usr/bin/kubelet", "--v=2")
			}
			var warnings []string
			k, err := findKubelet(root, tt.pid, func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) })
			if tt.wantErr != "" {
				var ue *usageError
				if !errors.As(err, &ue) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want usage error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantKubeletPID(t, k, tt.wantPID)
			if len(warnings) != 1 || !strings.Contains(warnings[0], tt.wantWarn) {
				t.Errorf("warnings %q, want one with %q", warnings, tt.wantWarn)
			}
		})
	}
}

// TestKubeletFilesMustBeRootOwned checks the rule for the files a kubelet's
// flags name: one that another user can write is not read (one warning
// naming the process and the file), and nodegc does without it; the
// operator's --kubelet-config is read as given.
func TestKubeletFilesMustBeRootOwned(t *testing.T) {
	snap := writeFile(t, "snap.json", snapshotJSON)
	dir := t.TempDir()
	eve := filepath.Join(dir, "eve")
	if err := os.Mkdir(eve, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(eve, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte("kind: KubeletConfiguration\nimageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(eve, 65534, 65534); err != nil {
		t.Skipf("chown needs root: %v", err)
	}
	root := filepath.Join(dir, "proc")
	fakeProcess(t, root, 12, 0, "/bin/sh", "/usr/bin/kubelet", "--config", cfg)

	t.Run("the kubelet's --config in a directory another user owns is not read, with one warning", func(t *testing.T) {
		c := newCLI("")
		c.f.ProcRoot = root
		if code := c.run("plan", "--from", snap, "--kubelet-pid", "12"); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if strings.Contains(c.out.String(), "kubelet config "+cfg) {
			t.Errorf("the plan took settings from %s:\n%s", cfg, c.out.String())
		}
		want := "nodegc: warning: the --config of the kubelet command line (pid 12) " + cfg + " is not used: " + eve + ": owned by uid 65534, not root"
		if lines := c.stderrLines(); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
			t.Errorf("stderr %q, want one line starting %q", lines, want)
		}
	})
	t.Run("the operator's --kubelet-config is read as given, wherever it is", func(t *testing.T) {
		c := newCLI("")
		c.f.ProcRoot = root
		if code := c.run("plan", "--from", snap, "--kubelet-pid", "12", "--kubelet-config", cfg); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if !strings.Contains(c.out.String(), "kubelet config "+cfg) || c.err.Len() > 0 {
			t.Errorf("the operator's file was not read as given: stderr %q\n%s", c.err.String(), c.out.String())
		}
	})
}

// TestFindKubeletWhereProcess1CannotBeRead: where process 1 is no one's
// to inspect (a VM's init), nodegc's own PID namespace stands for the
// host's and a process in a pod's cgroup is not the kubelet.
func TestFindKubeletWhereProcess1CannotBeRead(t *testing.T) {
	root := t.TempDir()
	fakeProcess(t, root, 10, 0, "/bin/sh", "/usr/bin/kubelet", "--v=2")
	fakeProcess(t, root, 40, 0, "/bin/sh", "/usr/bin/kubelet", "--v=2")
	for pid, cg := range map[int]string{10: "0::/system.slice/kubelet.service\n", 40: "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-1.scope\n"} {
		if err := os.WriteFile(filepath.Join(root, strconv.Itoa(pid), "cgroup"), []byte(cg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(root, "1")); err != nil {
		t.Fatal(err)
	}
	onFakeHost(t, root, 0, hostPIDNS, "/") // nodegc itself, as "self"
	if err := os.Rename(filepath.Join(root, "0"), filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	k, err := findKubelet(root, 0, func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) })
	if err != nil || k == nil || k.PID != 10 {
		t.Fatalf("found %+v, %v; want pid 10", k, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "process 40 is named kubelet but is ignored: it runs in a pod's cgroup (kubepods)") {
		t.Errorf("warnings %q", warnings)
	}
}

// TestFindKubeletWhereProcess1CannotBeReadComparesRoots: where process 1
// is no one's to inspect, nodegc's own root directory stands for the
// host's, as its own PID namespace does: a root process named kubelet in
// the host's PID namespace but with a root directory of its own (chroot,
// a hostPID container) is not the kubelet; and where nodegc's own root
// cannot be read either, no process is taken for the kubelet and the
// warning asks for --kubelet-pid.
func TestFindKubeletWhereProcess1CannotBeReadComparesRoots(t *testing.T) {
	chroot := t.TempDir() // the chrooted process's root: not nodegc's
	for _, tt := range []struct {
		name     string
		procs    []fakeProc
		selfRoot bool
		wantPID  int
		wantWarn []string
	}{
		{
			name:     "a chrooted root process named kubelet is ignored, not counted: the one sharing nodegc's root is the kubelet",
			procs:    []fakeProc{{pid: 10, exe: "/bin/sh"}, {pid: 40, exe: "/bin/sh", root: chroot}},
			selfRoot: true,
			wantPID:  10,
			wantWarn: []string{"process 40 is named kubelet but is ignored: its root directory is not nodegc's own, which stands for the host's where process 1's cannot be read, as a chrooted or a container's process's is not; if it is this node's kubelet, name it with --kubelet-pid"},
		},
		{
			name:     "a chrooted root process named kubelet alone is no kubelet",
			procs:    []fakeProc{{pid: 40, exe: "/bin/sh", root: chroot}},
			selfRoot: true,
			wantWarn: []string{"process 40 is named kubelet but is ignored: its root directory is not nodegc's own"},
		},
		{
			name:     "with nodegc's own root unreadable too, no process is the kubelet, and the warning asks for --kubelet-pid",
			procs:    []fakeProc{{pid: 10, exe: "/bin/sh"}},
			wantWarn: []string{"process 10 is named kubelet but is ignored: no root directory to compare with (process 1's and nodegc's own cannot be read: "},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, p := range tt.procs {
				if p.root != "" {
					onFakeHost(t, root, p.pid, hostPIDNS, p.root)
				}
				fakeProcess(t, root, p.pid, p.uid, p.exe, "/usr/bin/kubelet", "--v=2")
				if err := os.WriteFile(filepath.Join(root, strconv.Itoa(p.pid), "cgroup"), []byte("0::/system.slice/kubelet.service\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(filepath.Join(root, "1")); err != nil {
				t.Fatal(err)
			}
			onFakeHost(t, root, 0, hostPIDNS, "/") // nodegc itself, as "self"
			if err := os.Rename(filepath.Join(root, "0"), filepath.Join(root, "self")); err != nil {
				t.Fatal(err)
			}
			if !tt.selfRoot {
				if err := os.Remove(filepath.Join(root, "self", "root")); err != nil {
					t.Fatal(err)
				}
			}
			var warnings []string
			k, err := findKubelet(root, 0, func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) })
			if err != nil {
				t.Fatal(err)
			}
			wantKubeletPID(t, k, tt.wantPID)
			if len(warnings) != len(tt.wantWarn) {
				t.Fatalf("warnings %q, want %q", warnings, tt.wantWarn)
			}
			for i, w := range tt.wantWarn {
				if !strings.Contains(warnings[i], w) || !strings.Contains(warnings[i], "--kubelet-pid") {
					t.Errorf("warning %q, want it to contain %q and name --kubelet-pid", warnings[i], w)
				}
			}
		})
	}
}

// wantKubeletPID fails t unless findKubelet found the process want (0:
// none).
func wantKubeletPID(t *testing.T, k *kubeletProcess, want int) {
	t.Helper()
	switch {
	case k == nil && want != 0:
		t.Errorf("found no kubelet, want pid %d", want)
	case k != nil && k.PID != want:
		t.Errorf("found pid %d, want %d", k.PID, want)
	}
}

package attacks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKubeletRuleWhereProcess1CannotBeRead: where process 1 is no one's
// to inspect (a VM's init; here the namespace's init, which keeps
// CAP_SYS_PTRACE that nodegc and the processes beside it lack, so the
// kernel refuses nodegc its /proc/1/root and ns/pid), nodegc's own root
// directory stands for the host's in the kubelet rule. A root process
// named kubelet in the host's PID namespace but chrooted to a directory of
// its own (root with hostPID and a root of its own, as `docker run
// --pid=host` or chroot gives) is not the kubelet: it lends nodegc none of
// its flags and does not make it exit 2 beside the real one.
func TestKubeletRuleWhereProcess1CannotBeRead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the kubelet rule is about what root believes: the rows need root")
	}
	for _, tt := range []struct {
		name  string
		check func(t *testing.T) error
	}{
		{"a chrooted root process named kubelet beside the real one does not make nodegc exit 2, nor lend it its flags", func(t *testing.T) error {
			p := plant(t)
			r := onNodeUninspectable(t, []uninspectableKubelet{{args: []string{"--maximum-dead-containers=7"}}, {chroot: true, args: []string{"--maximum-dead-containers=0"}}}, p.planArgs(t)...)
			if r.code != 0 {
				return fmt.Errorf("exit %d, stderr %q; want 0", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "--maximum-dead-containers                7              kubelet command line (pid ") {
				return fmt.Errorf("the plan did not read the kubelet that shares nodegc's root:\n%s", r.stdout)
			}
			return chrootWarned(r)
		}},
		{"a chrooted root process named kubelet alone, with --image-gc-high-threshold=0, does not change the operator's policy", func(t *testing.T) error {
			p := plant(t)
			r := onNodeUninspectable(t, []uninspectableKubelet{{chroot: true, args: []string{"--image-gc-high-threshold=0", "--image-gc-low-threshold=0", "--minimum-image-ttl-duration=0s"}}},
				append(p.planArgs(t), "-o", "json")...)
			if err := imagesPlanned(r, 0); err != nil {
				return err
			}
			return chrootWarned(r)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(t); err != nil {
				t.Error(err)
			}
		})
	}
}

// chrootWarned checks that nodegc said why it ignored the chrooted
// process and how to name a kubelet it cannot recognise.
func chrootWarned(r run) error {
	if !strings.Contains(r.stderr, "is named kubelet but is ignored: its root directory is not nodegc's own") || !strings.Contains(r.stderr, "--kubelet-pid") {
		return fmt.Errorf("stderr %q: want the warning naming the chrooted process, its root directory and --kubelet-pid", r.stderr)
	}
	return nil
}

// uninspectableKubelet is a root process named kubelet (as fakeKubelet),
// chrooted to a directory of its own when chroot is set.
type uninspectableKubelet struct {
	chroot bool
	args   []string
}

// dropPtrace runs a command without CAP_SYS_PTRACE (neither permitted nor
// inheritable): root that lacks it cannot inspect a process that has it.
const dropPtrace = "setpriv --inh-caps=-sys_ptrace --bounding-set=-sys_ptrace "

// onNodeUninspectable is onNode where process 1 cannot be inspected:
// nodegc and the processes named kubelet run without CAP_SYS_PTRACE in
// new PID and mount namespaces whose init keeps it, so the kernel refuses
// nodegc process 1's root directory and PID namespace but not theirs. A
// chrooted one's root is a directory of the test's with the host's /usr
// and /dev bound into it (its executable is still a root-owned file).
func onNodeUninspectable(t *testing.T, kubelets []uninspectableKubelet, args ...string) run {
	t.Helper()
	chroot := t.TempDir()
	var script strings.Builder
	script.WriteString("for d in /etc/kubernetes /var/lib/kubelet; do if [ -d $d ]; then mount -t tmpfs -o mode=0755 tmpfs $d || exit 97; fi; done\n")
	fmt.Fprintf(&script, "ch=%s\nmkdir $ch/usr $ch/dev && mount --bind -o ro /usr $ch/usr && mount --bind /dev $ch/dev || exit 97\nfor d in bin sbin lib lib64; do [ -L /$d ] && ln -s usr/$d $ch/$d; done\n", shellQuote(chroot))
	script.WriteString(dropPtrace + "stat -L /proc/1/root >/dev/null 2>&1 && exit 96\n")
	for _, k := range kubelets {
		cmd := "exec -a kubelet bash -c 'sleep 300 & wait' kubelet " + shellQuote(k.args...)
		prefix := dropPtrace
		if k.chroot {
			prefix += "chroot $ch "
		}
		fmt.Fprintf(&script, "%sbash -c %s &\n", prefix, shellQuote(cmd))
	}
	script.WriteString(runWithKubelets(len(kubelets), dropPtrace))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private",
		"bash", "-c", script.String(), "onNodeUninspectable", binary(t)}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	r := finish(ctx, cmd)
	switch r.code {
	case 96:
		t.Skipf("without CAP_SYS_PTRACE nodegc could still inspect the namespace's init: this kernel does not hide it")
	case 97, 98:
		t.Fatalf("setting up the namespace failed (exit %d): %s", r.code, r.stderr)
	}
	return r
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nodegc/nodegc/internal/trust"
)

// defaultProcRoot is where the running kubelet is looked for.
const defaultProcRoot = "/proc"

// Flags nodegc reads from the kubelet's command line besides the policy
// flags, which have the kubelet's own names (policy.go).
const (
	kubeletFlagConfig           = "config"
	kubeletFlagRuntimeEndpoint  = "container-runtime-endpoint"
	kubeletFlagRootDir          = "root-dir"
	kubeletFlagKubeconfig       = "kubeconfig"
	kubeletFlagHostnameOverride = "hostname-override"
)

// defaultKubeletRootDir is the kubelet's --root-dir default.
const defaultKubeletRootDir = "/var/lib/kubelet"

// kubeletPathFlags are the flags whose relative values the kubelet resolves
// against its own working directory ("relative paths start at the
// Kubelet's current working directory", cmd/kubelet/app/options).
var kubeletPathFlags = []string{kubeletFlagConfig, kubeletFlagRootDir, kubeletFlagKubeconfig}

// kubeletProcess is the node's running kubelet as its command line shows
// it. Some settings, the container-GC ones among them, exist only as
// kubelet flags, so the config file alone would give nodegc the defaults.
type kubeletProcess struct {
	PID int
	// Flags maps a flag name, without dashes, to its last value on the
	// command line (pflag's last-one-wins). Paths are made absolute.
	Flags map[string]string
}

// source is the provenance of a value taken from the command line.
func (k *kubeletProcess) source() string {
	return fmt.Sprintf("kubelet command line (pid %d)", k.PID)
}

// flag returns the flag's value and whether the command line set it.
func (k *kubeletProcess) flag(name string) (string, bool) {
	if k == nil {
		return "", false
	}
	v, ok := k.Flags[name]
	return v, ok
}

// kubeletNode is what nodegc learned about how the node's kubelet reaches
// the API server and names its node, for the pod source. Empty fields
// mean the kubelet's command line did not set them (or no kubelet runs).
type kubeletNode struct {
	// PID is the kubelet read; 0 when none was found.
	PID int
	// Kubeconfig is the kubelet's --kubeconfig.
	Kubeconfig string
	// HostnameOverride is the kubelet's --hostname-override.
	HostnameOverride string
	// RootDir is the kubelet's --root-dir, else its default.
	RootDir string
}

// node returns what the pod source needs from the kubelet; it works on a
// nil config (no file, no kubelet).
func (c *kubeletConfig) node() kubeletNode {
	n := kubeletNode{RootDir: defaultKubeletRootDir}
	if c == nil || c.Proc == nil {
		return n
	}
	n.PID = c.Proc.PID
	n.Kubeconfig, _ = c.Proc.flag(kubeletFlagKubeconfig)
	n.HostnameOverride, _ = c.Proc.flag(kubeletFlagHostnameOverride)
	if dir, ok := c.Proc.flag(kubeletFlagRootDir); ok && dir != "" {
		n.RootDir = dir
	}
	return n
}

// findKubelet returns the running kubelet: the process under procRoot
// whose executable (argv[0]) is named kubelet and that checkKubelet
// trusts. A process named kubelet that fails the check is ignored, not
// counted, with a warning (warn) naming it: anyone can start `exec -a
// kubelet sleep` with flags of their choosing. pid > 0 (--kubelet-pid)
// selects that process, which must be a trusted kubelet, though it may run
// in a container of its own (the operator named it). No kubelet is nil,
// nil. More than one trusted kubelet without pid is a usage error naming
// them, since nodegc cannot know which one runs this node's pods.
func findKubelet(procRoot string, pid int, warn func(format string, a ...any)) (*kubeletProcess, error) {
	if procRoot == "" {
		return nil, nil
	}
	if pid > 0 {
		args, err := readCmdline(procRoot, pid)
		if err != nil || !isKubelet(args) {
			return nil, usageErrorf("--kubelet-pid: process %d is not a running kubelet", pid)
		}
		if err := checkKubelet(procRoot, pid, true); err != nil {
			return nil, usageErrorf("--kubelet-pid: process %d is not the kubelet: %v", pid, err)
		}
		if err := onHost(procRoot, pid); err != nil {
			warn("process %d is taken for the kubelet because --kubelet-pid names it, though it does not run on the host (%v): the files its command line names are read on the host", pid, err)
		}
		return newKubeletProcess(procRoot, pid, args), nil
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, nil // no /proc: nothing to learn from
	}
	var found []*kubeletProcess
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p <= 0 {
			continue
		}
		args, err := readCmdline(procRoot, p)
		if err != nil || !isKubelet(args) {
			continue // gone since the listing, or not ours to read
		}
		if err := checkKubelet(procRoot, p, false); err != nil {
			warn("process %d is named kubelet but is ignored: %v", p, err)
			continue
		}
		found = append(found, newKubeletProcess(procRoot, p, args))
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	pids := make([]string, len(found))
	for i, k := range found {
		pids[i] = strconv.Itoa(k.PID)
	}
	return nil, usageErrorf("--kubelet-pid: %d kubelets are running (pids %s); pass --kubelet-pid to say which one runs this node", len(found), strings.Join(pids, ", "))
}

// checkKubelet returns nil when process pid can be the kubelet: it runs
// on the host (onHost; unless named, which --kubelet-pid does), as root,
// its real and effective uid both 0 (/proc/PID/status), and its
// executable is a root-owned regular file no one else can write. The
// executable is stat'ed through /proc/PID/exe, which is the file the
// process runs even if its name was replaced or removed since. Otherwise
// the error says which check failed.
func checkKubelet(procRoot string, pid int, named bool) error {
	if !named {
		if err := onHost(procRoot, pid); err != nil {
			return err
		}
	}
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return fmt.Errorf("its uid cannot be read: %w", ioCause(err))
	}
	real, effective, ok := statusUIDs(status)
	switch {
	case !ok:
		return errors.New("its uid cannot be read: no Uid line in its status")
	case real != "0" || effective != "0":
		return fmt.Errorf("it runs as uid %s (effective %s), not root", real, effective)
	}
	exe, err := os.Stat(filepath.Join(dir, "exe"))
	if err != nil {
		return fmt.Errorf("its executable cannot be read: %w", ioCause(err))
	}
	if !exe.Mode().IsRegular() {
		return errors.New("its executable is not a regular file")
	}
	if err := trust.Owner("its executable", exe); err != nil {
		return err
	}
	return nil
}

// onHost returns nil when process pid runs on the host as process 1
// under procRoot (the host's init, seen from the host or from a pod with
// hostPID) does: in its PID namespace, with its root directory. Root in a
// container (most images run as root, without a user namespace) passes
// every other check: it is uid 0, and the files of its own image are
// owned by the host's root. But its root directory is its image's, and
// without hostPID its PID namespace is its own; the kubelet, a host
// service, has the host's. (A mount namespace of its own is no sign: a
// kubelet unit with systemd's PrivateTmp has one, with the host's root.)
// Process 1 may be no one's to inspect (a VM's init is not, in this
// project's CI): nodegc's own PID namespace and root directory then stand
// for the host's (it sees the kubelet only on the host or with hostPID,
// and takes it only when it shares nodegc's root: a chroot or a container
// of its own does not), and a process in a pod's cgroup (kubepods) is not
// the kubelet either. Where neither process 1's nor nodegc's own can be
// read, no process passes (fail closed). A kubelet that runs in a
// container of its own (RKE1, Talos), or beside a nodegc that runs in
// one where process 1 cannot be inspected, fails it; its operator names
// it with --kubelet-pid.
func onHost(procRoot string, pid int) error {
	ref := "1"
	host, err := os.Readlink(filepath.Join(procRoot, ref, "ns", "pid"))
	if err != nil {
		ref = "self"
		if host, err = os.Readlink(filepath.Join(procRoot, ref, "ns", "pid")); err != nil {
			return fmt.Errorf("no PID namespace to compare with (process 1's and nodegc's own cannot be read): %w", ioCause(err))
		}
	}
	its, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "ns", "pid"))
	if err != nil {
		return fmt.Errorf("its PID namespace cannot be read: %w", ioCause(err))
	}
	if its != host {
		return fmt.Errorf("it runs in a PID namespace of its own (%s; the host's is %s), as a container's process does; if it is this node's kubelet, name it with --kubelet-pid", its, host)
	}
	ref = "1"
	hostRoot, err := os.Stat(filepath.Join(procRoot, ref, "root"))
	if err != nil {
		ref = "self"
		if hostRoot, err = os.Stat(filepath.Join(procRoot, ref, "root")); err != nil {
			return fmt.Errorf("no root directory to compare with (process 1's and nodegc's own cannot be read: %w); if it is this node's kubelet, name it with --kubelet-pid", ioCause(err))
		}
	}
	itsRoot, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid), "root"))
	if err != nil {
		return fmt.Errorf("its root directory cannot be read: %w", ioCause(err))
	}
	switch {
	case !os.SameFile(hostRoot, itsRoot) && ref == "self":
		return errors.New("its root directory is not nodegc's own, which stands for the host's where process 1's cannot be read, as a chrooted or a container's process's is not; if it is this node's kubelet, name it with --kubelet-pid")
	case !os.SameFile(hostRoot, itsRoot):
		return errors.New("its root directory is not the host's, as a container's process's is not; if it is this node's kubelet, name it with --kubelet-pid")
	case ref == "self":
		return notInPod(procRoot, pid)
	}
	return nil
}

// notInPod returns nil unless process pid is in a pod's cgroup: the
// kubelet's pods run under kubepods, the kubelet never does.
func notInPod(procRoot string, pid int) error {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return fmt.Errorf("its cgroup cannot be read: %w", ioCause(err))
	}
	if bytes.Contains(data, []byte("kubepods")) {
		return errors.New("it runs in a pod's cgroup (kubepods), as a container's process does")
	}
	return nil
}

// statusUIDs returns the real and effective uid from /proc/PID/status's
// "Uid:\treal\teffective\tsaved\tfs" line.
func statusUIDs(status []byte) (real, effective string, ok bool) {
	for line := range strings.Lines(string(status)) {
		rest, found := strings.CutPrefix(line, "Uid:")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return "", "", false
		}
		return f[0], f[1], true
	}
	return "", "", false
}

// readCmdline reads /proc/PID/cmdline as its NUL-separated arguments.
func readCmdline(procRoot string, pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\x00")
	if len(data) == 0 {
		return nil, errors.New("empty command line") // a kernel thread or a zombie
	}
	return strings.Split(string(data), "\x00"), nil
}

// isKubelet reports whether the command line's executable is named kubelet.
func isKubelet(args []string) bool {
	return len(args) > 0 && filepath.Base(args[0]) == "kubelet"
}

func newKubeletProcess(procRoot string, pid int, args []string) *kubeletProcess {
	k := &kubeletProcess{PID: pid, Flags: parseKubeletArgs(args[1:])}
	// Relative paths are relative to the kubelet's working directory.
	cwd, cwdErr := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "cwd"))
	for _, name := range kubeletPathFlags {
		v, ok := k.Flags[name]
		if !ok || v == "" || filepath.IsAbs(v) || cwdErr != nil {
			continue
		}
		k.Flags[name] = filepath.Join(cwd, v)
	}
	return k
}

// parseKubeletArgs reads pflag-style flags: --name=value, and --name value
// when the next argument is not a flag (a boolean flag written without a
// value is followed by the next flag). The last occurrence wins, as in
// pflag; parsing stops at "--". Shorthands (-v 5) are skipped.
func parseKubeletArgs(args []string) map[string]string {
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue // a shorthand or its value
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		if name == "" {
			continue
		}
		if !hasValue {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
				i++
			} else {
				value = "true" // a boolean flag
			}
		}
		flags[name] = value
	}
	return flags
}

// runtimeEndpoint returns the kubelet's runtime endpoint, its command
// line's over its file's, and what set it: origin names the flag or field
// (for errors), source is the provenance (for the plan's runtime line).
func (c *kubeletConfig) runtimeEndpoint() (ep, origin, source string) {
	if c == nil {
		return "", "", ""
	}
	if v, ok := c.Proc.flag(kubeletFlagRuntimeEndpoint); ok && v != "" {
		return v, "--" + kubeletFlagRuntimeEndpoint + " on the " + c.Proc.source(), c.Proc.source()
	}
	if c.ContainerRuntimeEndpoint != "" {
		return c.ContainerRuntimeEndpoint, c.Path + ": containerRuntimeEndpoint", sourceConfig(c.Path)
	}
	return "", "", ""
}

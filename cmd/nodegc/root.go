package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/nodegc/nodegc/engine"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/trust"
)

// factory holds the process's dependencies: the streams, the terminal
// check, the environment and the clock. run fills it from the real process;
// tests fill it with buffers and fakes.
type factory struct {
	In       io.Reader
	Out, Err io.Writer
	// IsTerminal reports whether In is a terminal a person can answer.
	IsTerminal func() bool
	// OutIsTerminal reports whether Out is a terminal the dashboard can
	// draw on.
	OutIsTerminal func() bool
	// OutWidth is the width of the terminal Out is, 0 when it is none or
	// cannot tell; nil means 0.
	OutWidth func() int
	Getenv   func(string) string
	Now      func() time.Time
	// DefaultKubeletConfig is read in live mode when it exists and no
	// --kubelet-config is given.
	DefaultKubeletConfig string
	// ProcRoot is where the running kubelet is looked for (/proc); ""
	// looks for none.
	ProcRoot string
	// DefaultKubeconfig is the pod source's kubeconfig when neither
	// --kubeconfig nor the kubelet names one and it exists; "" means none.
	DefaultKubeconfig string
	// Hostname names the node when neither --node-name nor the kubelet's
	// --hostname-override does; nil means os.Hostname.
	Hostname func() (string, error)

	// refused holds the files trusted has refused, so each is warned
	// about once.
	refused map[string]bool
}

// warnf prints a one-line warning on stderr.
func (f *factory) warnf(format string, a ...any) {
	fmt.Fprintf(f.Err, "nodegc: warning: "+format+"\n", a...)
}

// trusted reports whether path may be read: trust.Path accepts it (it and
// every directory above it are root's alone). what says who named it ("the
// --config of the kubelet command line (pid 7)"). A refused file is warned
// about once, naming what and the file, and the caller does without it. A
// missing file is not refused: the caller says it is missing (and no one
// but root can create it, since the walk checked its directories).
func (f *factory) trusted(what, path string) bool {
	err := trust.Path(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if !f.refused[path] {
		f.warnf("%s %s is not used: %v; nodegc reads only files that root alone can write", what, path, err)
	}
	if f.refused == nil {
		f.refused = map[string]bool{}
	}
	f.refused[path] = true
	return false
}

// globalOptions are the flags every runtime-facing command shares.
type globalOptions struct {
	// RuntimeEndpoint is --runtime-endpoint; "" falls back to
	// CONTAINER_RUNTIME_ENDPOINT, the kubelet config, then discovery.
	RuntimeEndpoint string
	// KubeletConfig is --kubelet-config; "" means the default path in
	// live mode, nothing otherwise.
	KubeletConfig string
	// KubeletPID is --kubelet-pid: the kubelet whose command line to
	// read; 0 finds the only one running, -1 reads none.
	KubeletPID int
	// Kubeconfig is --kubeconfig: the pod source's API credentials.
	Kubeconfig string
	// NodeName is --node-name: the node whose pods the pod source watches.
	NodeName string
	// PodSource is --pod-source: auto or off.
	PodSource string
	// StateDir holds image records and the deletion journal.
	StateDir string
	// Timeout bounds each CRI call.
	Timeout time.Duration
	// LogFile, when set, receives the engine's log as JSON lines: one Info
	// line per deletion, and with Debug one per item evaluated.
	LogFile string
	// Debug logs every item the engine evaluates.
	Debug bool
	// Simulated is --simulated: the runtime is a simulated node (nodegc
	// simnode). It is the only way nodegc treats a runtime as simulated;
	// connect refuses a runtime that is not what it says.
	Simulated bool

	log *slog.Logger
	// logDefault says LogFile is the dashboard's default log in the state
	// dir, not --log-file.
	logDefault bool
	// logOut is the open --log-file, for the libraries' logs too.
	logOut io.Writer
}

// validate checks the global flags that parse but make no sense: a
// --timeout of zero or less would otherwise silently become the CRI
// client's default.
func (g *globalOptions) validate() error {
	if g.Timeout <= 0 {
		return usageErrorf("--timeout: must be greater than 0, got %s", g.Timeout)
	}
	if g.PodSource != podSourceAuto && g.PodSource != podSourceOff {
		return usageErrorf("--pod-source: must be %s or %s, got %q", podSourceAuto, podSourceOff, g.PodSource)
	}
	return nil
}

// dashboardLogFile makes the dashboard log to <stateDir>/nodegc.log when
// no --log-file was given: anything written to the terminal would tear the
// screen. writable says the state dir is this process's to write (it can
// remove, or it is the demo's own); otherwise, as for --read-only, nothing
// is written there and the logs are dropped.
func (g *globalOptions) dashboardLogFile(stateDir string, writable bool) {
	if g.LogFile != "" || stateDir == "" || !writable {
		return
	}
	// The dir is not made here: newEngine makes it once the runtime has
	// answered, so a run that cannot start writes nothing.
	g.LogFile = filepath.Join(stateDir, "nodegc.log")
	g.logDefault = true
}

// logger returns the engine's logger: nil (discard) without --log-file.
// The file is opened once, for appending, 0600, as the engine opens its
// state files: root appends to it, so a name another user could plant in
// a directory they can write must not lead anywhere else. A symlink is
// refused, not followed; a FIFO or device is refused, and the open does
// not block on one (it hung past SIGTERM); a file with another hard link
// (a second name for someone else's file) is refused.
func (g *globalOptions) logger() (*slog.Logger, error) {
	if g.LogFile == "" || g.log != nil {
		return g.log, nil
	}
	refuse := func(err error) error {
		if g.logDefault {
			return &fileError{Path: g.LogFile, Err: err}
		}
		return usageErrorf("--log-file: %s %v", g.LogFile, err)
	}
	file, err := os.OpenFile(g.LogFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, refuse(errors.New("is a symlink; nodegc does not follow links to the files it writes"))
	}
	if errors.Is(err, syscall.ENXIO) { // a FIFO with no reader, or a device
		return nil, refuse(errors.New("is not a regular file"))
	}
	if err != nil {
		return nil, refuse(fmt.Errorf("cannot be opened: %w", ioCause(err)))
	}
	if err := ownLogFile(file); err != nil {
		file.Close()
		return nil, refuse(err)
	}
	level := slog.LevelInfo
	if g.Debug {
		level = slog.LevelDebug
	}
	g.logOut = file
	g.log = slog.New(slog.NewJSONHandler(file, &slog.HandlerOptions{Level: level}))
	return g.log, nil
}

// ownLogFile returns nil when the open log file is a regular file with
// no other name, owned by this process's user (a file another user
// planted would keep their mode, and their read of root's log).
func ownLogFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return ioCause(err)
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
	case st.Nlink > 1:
		return fmt.Errorf("has %d hard links; nodegc appends only to a file no other name leads to", st.Nlink)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("is owned by uid %d; nodegc appends only to a file of its own user's", st.Uid)
	}
	return nil
}

// defaultStateDir is where image records and the journal live.
const defaultStateDir = "/var/lib/nodegc"

// execute runs the command tree on args and returns the exit code. Every
// error is printed as one line on stderr.
func execute(ctx context.Context, f *factory, args []string) int {
	cmd := newCmdRoot(f)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(f.Err, errorLine(err))
	}
	return exitCode(err)
}

// newCmdRoot builds the nodegc command tree.
func newCmdRoot(f *factory) *cobra.Command {
	g := &globalOptions{}
	cmd := newCmdDashboard(f, g, nil)
	addGlobalFlags(cmd.PersistentFlags(), g)
	cmd.SetIn(f.In)
	cmd.SetOut(f.Out)
	cmd.SetErr(f.Err)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	// Every subcommand inherits this: the global flags are checked before
	// any command runs.
	cmd.PersistentPreRunE = func(*cobra.Command, []string) error { return g.validate() }
	cmd.Version = version
	cmd.SetVersionTemplate("nodegc {{.Version}}\n")

	cmd.AddCommand(
		newCmdPlan(f, g, nil),
		newCmdGC(f, g, nil),
		newCmdSnapshot(f, g, nil),
		newCmdCgroups(f, g, nil),
		newCmdAgent(f, g, nil),
		newCmdFleet(f, g),
		newCmdSimnode(f, nil),
		newCmdVersion(f),
	)
	return cmd
}

// addGlobalFlags registers the flags every subcommand shares.
func addGlobalFlags(pf *pflag.FlagSet, g *globalOptions) {
	pf.StringVar(&g.RuntimeEndpoint, "runtime-endpoint", "",
		"CRI runtime endpoint, e.g. unix:///run/containerd/containerd.sock (default: $CONTAINER_RUNTIME_ENDPOINT, the kubelet config's containerRuntimeEndpoint, then the well-known sockets)")
	pf.StringVar(&g.KubeletConfig, "kubelet-config", "",
		"KubeletConfiguration YAML to take defaults from (default: "+defaultKubeletConfigPath+" when it exists, in live mode)")
	pf.IntVar(&g.KubeletPID, "kubelet-pid", 0,
		"the running kubelet whose command line to read settings from; -1 reads none (default: the only process named kubelet that runs as root from a root-owned executable no one else can write, since anyone can name a process kubelet; with --from, none unless given). Files its flags name are read only when they and every directory above them are root's alone")
	pf.StringVar(&g.Kubeconfig, "kubeconfig", "",
		"kubeconfig for the pod source, which asks the API server which pods were deleted; used as given (default: the kubelet's --kubeconfig, then "+defaultKubeletKubeconfig+", then the in-cluster config; a default is used only when it, and the certificates, token file and exec plugin it names, are root's alone, since nodegc, as root, would run the exec plugin a kubeconfig names)")
	pf.StringVar(&g.NodeName, "node-name", "",
		"the node whose pods the pod source watches (default: the kubelet's --hostname-override, else the hostname, lower-cased, as the kubelet names its node)")
	pf.StringVar(&g.PodSource, "pod-source", podSourceAuto,
		"auto: ask the API server which pods were deleted or evicted, so their containers, sandboxes and logs go as the kubelet's would; off: keep to the container-GC limits only")
	pf.StringVar(&g.StateDir, "state-dir", defaultStateDir, "directory for image records and the deletion journal; must be writable unless nothing can be removed (gc --dry-run, --read-only, plan, snapshot)")
	pf.DurationVar(&g.Timeout, "timeout", cri.DefaultReadTimeout, "timeout of each CRI read call")
	pf.StringVar(&g.LogFile, "log-file", "", "append the engine's log (JSON lines: each deletion, and each item with --debug) to this file")
	pf.BoolVar(&g.Debug, "debug", false, "with --log-file, log every item the engine evaluates")
	pf.BoolVar(&g.Simulated, "simulated", false,
		"the runtime is a simulated node started by nodegc simnode: its image filesystem is measured through it, this machine's log files are not scanned, and no pod source starts unless --kubeconfig names one. Required for a simulated node, refused for any other runtime (--demo needs no flag)")
}

// noArgs rejects positional arguments as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return usageErrorf("unknown command %q for %q (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
}

// loadConfig returns the kubelet settings to use. In live mode (or with
// --kubelet-pid) it reads the running kubelet's command line; the file is
// the --kubelet-config file, else the kubelet's --config, else, in live
// mode, the default path when it exists. nil means neither a file nor a
// kubelet.
func loadConfig(f *factory, g *globalOptions, live bool) (*kubeletConfig, error) {
	var proc *kubeletProcess
	if g.KubeletPID < -1 {
		return nil, usageErrorf("--kubelet-pid: must be a process ID, or -1 for none, got %d", g.KubeletPID)
	}
	if (live && g.KubeletPID == 0) || g.KubeletPID > 0 {
		root := f.ProcRoot
		if root == "" && g.KubeletPID > 0 {
			root = defaultProcRoot
		}
		var err error
		if proc, err = findKubelet(root, g.KubeletPID, f.warnf); err != nil {
			return nil, err
		}
	}
	cfg, err := loadConfigFile(f, g, live, proc)
	if err != nil {
		return nil, err
	}
	if proc == nil {
		return cfg, nil
	}
	if cfg == nil {
		cfg = &kubeletConfig{}
	}
	cfg.Proc = proc
	return cfg, nil
}

// loadConfigFile reads the kubelet config file loadConfig chose; nil means
// none. The operator's --kubelet-config is read as given; the kubelet's
// --config and the default path are read only when f.trusted accepts them,
// and the podLogsDir they name is used only when it is trusted too (else
// the default applies).
func loadConfigFile(f *factory, g *globalOptions, live bool, proc *kubeletProcess) (*kubeletConfig, error) {
	if g.KubeletConfig != "" {
		cfg, err := loadKubeletConfig(g.KubeletConfig)
		if err != nil {
			return nil, err
		}
		return cfg, nil
	}
	path, fromProc := proc.flag(kubeletFlagConfig)
	what := "the kubelet config"
	switch {
	case fromProc && path != "":
		what = "the --" + kubeletFlagConfig + " of the " + proc.source()
	case !live || f.DefaultKubeletConfig == "":
		return nil, nil
	default:
		path = f.DefaultKubeletConfig
	}
	if !f.trusted(what, path) {
		return nil, nil
	}
	cfg, err := loadKubeletConfig(path)
	switch {
	case err == nil:
		if cfg.PodLogsDir != "" && !f.trusted("the podLogsDir of "+path, cfg.PodLogsDir) {
			cfg.PodLogsDir = ""
		}
		return cfg, nil
	case errors.Is(err, fs.ErrNotExist) && !fromProc:
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		f.warnf("%s: the --config of the %s does not exist here; using its command line and the kubelet defaults", path, proc.source())
		return nil, nil
	case errors.Is(err, fs.ErrPermission):
		f.warnf("%s: permission denied; using the kubelet defaults (run as root or pass --kubelet-config)", path)
		return nil, nil
	}
	return nil, err
}

// checkStateDir returns nil when dir can hold the deletion journal: it is
// not "", it exists or can be created (0700), and a file can be written in
// it; a dir it had to create to check is gone again.
// Otherwise it returns a usage error naming --state-dir and why. Every
// command that can remove checks it before it connects: a removal that is
// not journalled leaves no trace of what was deleted, so it is refused
// rather than warned about.
func checkStateDir(dir string) error {
	if dir == "" {
		return usageErrorf("--state-dir: must not be empty when nodegc can remove: every removal is journalled there")
	}
	_, err := os.Lstat(dir)
	fresh := errors.Is(err, os.ErrNotExist)
	if err := engine.CheckStateDir(dir); err != nil {
		return err
	}
	if fresh {
		// CheckStateDir made it, wrote its lock in it and took both away
		// again: it is writable, and nothing is left in a dir nothing may
		// run in yet (the runtime may be down).
		return nil
	}
	return probeStateDir(dir)
}

// probeStateDir returns nil when a file can be written in dir, else a
// usage error naming --state-dir. The agent's /readyz asks it of the dir
// it holds.
func probeStateDir(dir string) error {
	probe, err := os.CreateTemp(dir, ".nodegc-probe-*")
	if err != nil {
		return usageErrorf("--state-dir: %s is not writable (%v); every removal is journalled there", dir, ioCause(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

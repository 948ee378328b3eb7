// Command nodegc-sandbox starts and stops a real containerd with a seeded
// workload for trying nodegc by hand (make sandbox, make sandbox-down).
//
//	nodegc-sandbox up      start it, fill the image fs past the high threshold, print the endpoint
//	nodegc-sandbox status  print the endpoint and image fs usage of a running sandbox
//	nodegc-sandbox down    kill it, unmount everything and remove its directory
//
// The node is the realnode harness's, left running when the command exits;
// its state is in --dir (default /tmp/nodegc-sandbox). It needs root.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nodegc/nodegc/internal/realnode"
)

// state is what up writes to <dir>/sandbox.json for status and for people.
type state struct {
	Runtime       string              `json:"runtime"`
	Endpoint      string              `json:"endpoint"`
	ImageFs       string              `json:"imageFsMountpoint"`
	PodLogsDir    string              `json:"podLogsDir"`
	ContainerdPID int                 `json:"containerdPid"`
	StartedAt     time.Time           `json:"startedAt"`
	SandboxImage  realnode.ImageRef   `json:"sandboxImage"`
	Images        []realnode.ImageRef `json:"images"`
	Workload      []string            `json:"workload"`
}

const stateFile = "sandbox.json"

// options are the command's flags.
type options struct {
	runtime     realnode.Runtime
	dir         string
	imageFsSize int64
	imageSize   int64
	fillPercent int
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "nodegc-sandbox:", err)
		os.Exit(1)
	}
}

func run(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("nodegc-sandbox", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var o options
	var sizeMiB, imageMiB int64
	var runtimeName string
	fs.StringVar(&runtimeName, "runtime", realnode.Containerd16.Name, "containerd to run: containerd-1.6 (Debian's, alias containerd1) or containerd-2.2 (built by scripts/build-containerd2.sh, alias containerd2)")
	fs.StringVar(&o.dir, "dir", "/tmp/nodegc-sandbox", "directory holding the sandbox (config, socket, state, tmpfs)")
	fs.Int64Var(&sizeMiB, "image-fs-mib", 256, "size of the tmpfs image filesystem in MiB")
	fs.Int64Var(&imageMiB, "image-mib", 8, "size of each seeded image in MiB (it takes about twice that unpacked)")
	fs.IntVar(&o.fillPercent, "fill-percent", 88, "image filesystem usage to reach with images (the default high threshold is 85)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: nodegc-sandbox [flags] up|status|down")
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return errors.New("missing command")
	}
	cmd := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	o.imageFsSize, o.imageSize = sizeMiB<<20, imageMiB<<20
	rt, err := realnode.RuntimeNamed(runtimeName)
	if err != nil {
		return fmt.Errorf("-runtime: %w", err)
	}
	o.runtime = rt
	switch cmd {
	case "up":
		return up(o, out, errOut)
	case "status":
		return status(o, out)
	case "down":
		return down(o, out)
	}
	fs.Usage()
	return fmt.Errorf("unknown command %q", cmd)
}

func readState(dir string) (state, error) {
	var s state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("parse %s: %w", stateFile, err)
	}
	return s, nil
}

// alive reports whether the sandbox's containerd still runs.
func alive(s state) bool {
	return s.ContainerdPID > 0 && syscall.Kill(s.ContainerdPID, 0) == nil
}

func up(o options, out, errOut io.Writer) error {
	if s, err := readState(o.dir); err == nil && alive(s) {
		fmt.Fprintf(out, "nodegc sandbox is already up (containerd pid %d).\n", s.ContainerdPID)
		printCommand(out, o.dir, s)
		return nil
	}
	if _, err := os.Stat(o.dir); err == nil {
		if err := realnode.Cleanup(o.dir); err != nil {
			return fmt.Errorf("remove the previous sandbox: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	logf := func(format string, args ...any) { fmt.Fprintf(errOut, format+"\n", args...) }
	n, err := realnode.Launch(ctx, realnode.Options{Dir: o.dir, ImageFsSize: o.imageFsSize, Logf: logf, Runtime: o.runtime})
	if err != nil {
		return err
	}
	s, err := seed(n, o)
	if err != nil {
		if cerr := n.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return fmt.Errorf("seed the workload: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(o.dir, stateFile), append(b, '\n'), 0o600)
	}
	if err != nil {
		_ = n.Close()
		return fmt.Errorf("write state: %w", err)
	}
	u, _ := n.ImageFsUsage()
	fmt.Fprintf(out, "nodegc sandbox is up: a real %s (pid %d) on a %d MiB tmpfs, %d%% used by %d images.\n",
		s.Runtime, s.ContainerdPID, u.Capacity>>20, usagePercent(u), len(s.Images)+1)
	for _, w := range s.Workload {
		fmt.Fprintln(out, "  "+w)
	}
	printCommand(out, o.dir, s)
	return nil
}

// printCommand prints the whole nodegc command that stays inside the
// sandbox: its socket, its own state dir and pod logs dir, no kubelet
// config or process of the host (their policy and paths), and no pod
// source (the host's API server knows nothing of the sandbox's pods).
// A user who copies only --runtime-endpoint would garbage-collect the
// host's /var/log/pods and write /var/lib/nodegc.
func printCommand(out io.Writer, dir string, s state) {
	fmt.Fprintf(out, "Pod logs are under %s; the image filesystem is %s.\n", s.PodLogsDir, s.ImageFs)
	fmt.Fprintln(out, "Run nodegc against it (and nothing of the host) with:")
	fmt.Fprintf(out, "  sudo ./bin/nodegc --runtime-endpoint %s --state-dir %s --pod-logs-dir %s --kubelet-config /dev/null --kubelet-pid -1 --pod-source off\n",
		s.Endpoint, filepath.Join(dir, "nodegc-state"), s.PodLogsDir)
	fmt.Fprintln(out, "(make build first; add a subcommand such as plan or gc after it.) Stop it with: make sandbox-down")
}

// usagePercent is the kubelet's: 100 - floor(available*100/capacity).
func usagePercent(u realnode.FsUsage) int {
	if u.Capacity == 0 {
		return 0
	}
	return int(100 - u.Available*100/u.Capacity)
}

// seed fills the image filesystem past the fill percentage and makes what GC
// acts on: a pod with a running container and three dead restarts of its
// init container, a pod with an older NOTREADY sandbox beside its newest,
// and a stopped pod with a dead container.
func seed(n *realnode.Node, o options) (state, error) {
	s := state{
		Runtime:       n.Runtime().Name,
		Endpoint:      n.Endpoint(),
		ImageFs:       n.ImageFsMount(),
		PodLogsDir:    n.PodLogsDir(),
		ContainerdPID: n.PID(),
		StartedAt:     time.Now().UTC(),
		SandboxImage:  n.SandboxImage(),
	}
	if err := fillImageFs(n, o, &s); err != nil {
		return s, err
	}
	if len(s.Images) < 3 {
		return s, fmt.Errorf("only %d images fill the image fs; use smaller --image-mib", len(s.Images))
	}
	for _, pod := range []func(*realnode.Node, *state) error{seedWeb, seedCron, seedReport} {
		if err := pod(n, &s); err != nil {
			return s, err
		}
	}
	s.Workload = append(s.Workload, fmt.Sprintf("%d images unused by any container, the sandbox image %s too", len(s.Images)-3, realnode.SandboxImageRef))
	return s, nil
}

// fillImageFs imports images of o.imageSize, in batches, until the image
// filesystem is at least o.fillPercent used, and adds them to s.Images. It
// fails rather than fill the filesystem to the brim, or loop, when the
// percentage cannot be reached with images of that size.
func fillImageFs(n *realnode.Node, o options, s *state) error {
	// Each image costs about twice its size (blob plus snapshot).
	for batch := 0; ; batch++ {
		u, err := n.ImageFsUsage()
		if err != nil {
			return err
		}
		if usagePercent(u) >= o.fillPercent {
			return nil
		}
		want := u.Capacity*int64(o.fillPercent)/100 - u.Used
		count := max(1, int(want/(2*o.imageSize)))
		if 2*o.imageSize*int64(count) > u.Available-4<<20 || batch > 50 {
			return fmt.Errorf("cannot reach %d%% with %d MiB images (%d%% used, %d MiB free)", o.fillPercent, o.imageSize>>20, usagePercent(u), u.Available>>20)
		}
		imgs, err := n.ImportImages(count, o.imageSize, fmt.Sprintf("fill%d", batch))
		if err != nil {
			return err
		}
		s.Images = append(s.Images, imgs...)
	}
}

// seedWeb makes pod default/web: container app running on the first
// image, and three dead restarts of its init container on the second, for
// container GC's per-container limit.
func seedWeb(n *realnode.Node, s *state) error {
	web := "5e1d0c1a-0000-4000-8000-00000000000a"
	sb, err := n.RunPod("web", "default", web, realnode.QOSBurstable)
	if err != nil {
		return err
	}
	for attempt := range uint32(3) {
		if _, err := n.ExitedContainer(sb, "init", s.Images[1].Ref, attempt, 1); err != nil {
			return err
		}
	}
	if _, err := n.StartContainer(sb, "app", s.Images[0].Ref, 0); err != nil {
		return err
	}
	s.Workload = append(s.Workload, fmt.Sprintf("pod default/web: container app running (%s), 3 dead restarts of init (%s)", s.Images[0].Ref, s.Images[1].Ref))
	return nil
}

// seedCron makes pod default/cron: a stopped (NOTREADY) sandbox without
// containers beside a newer running one, for sandbox GC.
func seedCron(n *realnode.Node, s *state) error {
	cron := "5e1d0c1a-0000-4000-8000-00000000000b"
	old, err := n.RunPod("cron", "default", cron, realnode.QOSBestEffort)
	if err != nil {
		return err
	}
	if err := n.StopPod(old); err != nil {
		return err
	}
	sb, err := n.RunPod("cron", "default", cron, realnode.QOSBestEffort)
	if err != nil {
		return err
	}
	if _, err := n.StartContainer(sb, "tick", realnode.SandboxImageRef, 0); err != nil {
		return err
	}
	s.Workload = append(s.Workload, "pod default/cron: an older NOTREADY sandbox without containers beside its running newest")
	return nil
}

// seedReport makes pod jobs/report: stopped, with a dead container on the
// third image: what a finished job leaves for GC.
func seedReport(n *realnode.Node, s *state) error {
	batch := "5e1d0c1a-0000-4000-8000-00000000000c"
	sb, err := n.RunPod("report", "jobs", batch, realnode.QOSBestEffort)
	if err != nil {
		return err
	}
	if _, err := n.ExitedContainer(sb, "job", s.Images[2].Ref, 0, 0); err != nil {
		return err
	}
	if err := n.StopPod(sb); err != nil {
		return err
	}
	s.Workload = append(s.Workload, fmt.Sprintf("pod jobs/report: stopped, with a dead container (%s)", s.Images[2].Ref))
	return nil
}

func status(o options, out io.Writer) error {
	s, err := readState(o.dir)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(out, "nodegc sandbox is down.")
		return nil
	}
	if err != nil {
		return err
	}
	if !alive(s) {
		fmt.Fprintf(out, "nodegc sandbox is not running (containerd pid %d is gone); run make sandbox-down.\n", s.ContainerdPID)
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.ImageFs, &st); err == nil {
		u := realnode.FsUsage{Capacity: int64(st.Blocks) * st.Bsize, Available: int64(st.Bavail) * st.Bsize}
		fmt.Fprintf(out, "nodegc sandbox is up (%s, pid %d), image fs %d%% used.\n", cmp.Or(s.Runtime, realnode.Containerd16.Name), s.ContainerdPID, usagePercent(u))
	}
	printCommand(out, o.dir, s)
	return nil
}

func down(o options, out io.Writer) error {
	if _, err := os.Stat(o.dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(out, "nodegc sandbox is already down.")
		return nil
	}
	if err := realnode.Cleanup(o.dir); err != nil {
		return err
	}
	fmt.Fprintln(out, "nodegc sandbox is down: containerd and its containers stopped, everything unmounted, "+o.dir+" removed.")
	return nil
}

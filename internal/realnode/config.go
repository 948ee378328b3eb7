package realnode

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
)

// configTOML renders containerd's config: everything under the harness dir,
// the CRI plugin with the local sandbox image, cgroupfs driver, and
// restrict_oom_score_adj so sandboxes do not ask for a score the host refuses.
// containerd 1.x reads a version 2 config, 2.x a version 3 one.
func (n *Node) configTOML() string {
	if n.o.Runtime.Major() >= 2 {
		return n.configTOMLv3()
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by nodegc's realnode harness.
version = 2
root = %s
state = %s
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = %s

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %s
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %s
    restrict_oom_score_adj = true
    enable_selinux = false
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %s
      conf_dir = %s
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = %s
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = %s
`, q(n.root), q(n.state), q(n.sock), q(filepath.Join(n.dir, "opt")), q(cmp.Or(n.sandboxConfig, SandboxImageRef)),
		q(filepath.Join(n.dir, "cni", "bin")), q(filepath.Join(n.dir, "cni", "net.d")),
		q(n.snapshotter), q(filepath.Join(n.state, "runc")))
	return b.String()
}

// configTOMLv3 is configTOML for containerd 2: the version 3 layout, where
// the CRI plugin is split in three. io.containerd.cri.v1.images holds the
// snapshotter and the sandbox image, now the pinned image "sandbox";
// io.containerd.cri.v1.runtime holds restrict_oom_score_adj, CNI and runc;
// io.containerd.grpc.v1.cri keeps only the streaming server. NRI is
// disabled: it would listen on a socket shared by the whole host.
func (n *Node) configTOMLv3() string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return fmt.Sprintf(`# Written by nodegc's realnode harness (containerd 2).
version = 3
# Nothing from the host's /etc/containerd/conf.d, the default imports.
imports = []
root = %s
state = %s
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
  "io.containerd.nri.v1.nri",
]

[grpc]
  address = %s

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = %s
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = %s
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %s
  [plugins.'io.containerd.cri.v1.runtime']
    enable_selinux = false
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%s]
      conf_dir = %s
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = %s
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`, q(n.root), q(n.state), q(n.sock), q(filepath.Join(n.dir, "opt")),
		q(n.snapshotter), q(cmp.Or(n.sandboxConfig, SandboxImageRef)),
		q(filepath.Join(n.dir, "cni", "bin")), q(filepath.Join(n.dir, "cni", "net.d")),
		q(filepath.Join(n.state, "runc")))
}

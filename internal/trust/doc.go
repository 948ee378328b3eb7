// Package trust decides whether nodegc, running as root, may believe a file
// it did not write: only when no one but root could have written it. That
// is the rule sudo applies to sudoers and systemd to the paths it chases
// safely: the file, and every directory the kernel passes through to reach
// it (each symlink's target too), is owned by root and not writable by
// group or others. A non-root user can start a process named kubelet and
// point its flags at files of their own; what such a file says (a
// kubeconfig's exec plugin, a config's podLogsDir, a policy threshold) must
// not become what root does.
package trust

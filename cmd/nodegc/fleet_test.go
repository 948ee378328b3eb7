package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPluginArgs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		argv0 string
		args  []string
		want  []string
	}{
		{"kubectl nodegc is the fleet view", "/usr/local/bin/kubectl-nodegc", nil, []string{"fleet"}},
		{"kubectl nodegc NODE is a node's dashboard", "kubectl-nodegc", []string{"worker-1"}, []string{"fleet", "worker-1"}},
		{"nodegc is itself", "/usr/bin/nodegc", []string{"plan"}, []string{"plan"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pluginArgs(tc.argv0, tc.args); !slices.Equal(got, tc.want) {
				t.Errorf("pluginArgs(%q, %q) = %q, want %q", tc.argv0, tc.args, got, tc.want)
			}
		})
	}
}

func TestFleetBadInput(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctxKC := filepath.Join(dir, "with-context")
	if err := os.WriteFile(ctxKC, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a zero refresh", []string{"fleet", "--refresh", "0"}, "--refresh: must be greater than 0"},
		{"an unknown output", []string{"fleet", "-o", "yaml"}, "-o: must be json"},
		{"a zero pause", []string{"fleet", "--pause-for", "0s"}, "--pause-for: must be greater than 0"},
		{"a kubeconfig with no cluster", []string{"fleet", "--kubeconfig", kc}, "--kubeconfig"},
		{"a missing kubeconfig", []string{"fleet", "--kubeconfig", filepath.Join(dir, "none")}, "--kubeconfig"},
		// Issue 41: a context the kubeconfig lacks is --context's fault,
		// not --kubeconfig's.
		{"a context the kubeconfig lacks", []string{"fleet", "--kubeconfig", ctxKC, "--context", "nope"}, `--context: "nope" is not a context`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI("")
			code := c.run(tc.args...)
			stderr := c.err.String()
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line naming %s", code, stderr, tc.want)
			}
		})
	}
}

// TestFleetWithNoKubeconfigSaysSo pins issue 41: with no kubeconfig at
// all, one line says so and names --kubeconfig, not client-go's
// "try setting KUBERNETES_MASTER environment variable".
func TestFleetWithNoKubeconfigSaysSo(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	c := newCLI("")
	code := c.run("fleet", "-o", "json")
	stderr := strings.TrimSpace(c.err.String())
	if code != exitUsage || strings.Contains(stderr, "\n") || !strings.Contains(stderr, "no kubeconfig found") || strings.Contains(stderr, "KUBERNETES_MASTER") {
		t.Errorf("exit %d, stderr %q; want exit 2 and one line saying no kubeconfig was found", code, stderr)
	}
}

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

// kubeconfigYAML is a minimal kubeconfig for server.
func kubeconfigYAML(server string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
users:
- name: u
  user:
    token: t
contexts:
- name: x
  context:
    cluster: c
    user: u
current-context: x
`
}

// TestResolvePodSource pins where the pod source's credentials and node
// name come from, as the issue orders them: --kubeconfig, the kubelet's
// --kubeconfig, the kubeadm default path, in-cluster; the node name as the
// kubelet's GetHostname computes it.
func TestResolvePodSource(t *testing.T) {
	dir := t.TempDir()
	flagCfg := writeFile(t, "flag.conf", kubeconfigYAML("https://flag:6443"))
	kubeletCfg := writeFile(t, "kubelet.conf", kubeconfigYAML("https://kubelet:6443"))
	defaultCfg := writeFile(t, "default.conf", kubeconfigYAML("https://default:6443"))
	broken := writeFile(t, "broken.conf", "clusters: [")
	kubelet := func(flags map[string]string) *kubeletConfig {
		return &kubeletConfig{Proc: &kubeletProcess{PID: 77, Flags: flags}}
	}
	hostname := func() (string, error) { return " Node-A.example ", nil }
	tests := []struct {
		name        string
		g           globalOptions
		cfg         *kubeletConfig
		defaultPath string
		env         map[string]string
		wantHost    string // the API server, "" for no pod source
		wantOrigin  string
		wantNode    string
		wantWhy     string
	}{
		{
			name:     "--kubeconfig wins over the kubelet's",
			g:        globalOptions{Kubeconfig: flagCfg},
			cfg:      kubelet(map[string]string{"kubeconfig": kubeletCfg}),
			wantHost: "https://flag:6443", wantOrigin: "--kubeconfig " + flagCfg, wantNode: "node-a.example",
		},
		{
			name:        "the kubelet's --kubeconfig wins over the default path, and says which kubelet",
			cfg:         kubelet(map[string]string{"kubeconfig": kubeletCfg}),
			defaultPath: defaultCfg,
			wantHost:    "https://kubelet:6443", wantOrigin: "kubelet command line (pid 77): " + kubeletCfg, wantNode: "node-a.example",
		},
		{
			name:        "the default path when nothing names one",
			defaultPath: defaultCfg,
			wantHost:    "https://default:6443", wantOrigin: defaultCfg, wantNode: "node-a.example",
		},
		{
			name:        "a missing default path and no cluster env: no pod source, and why",
			defaultPath: filepath.Join(dir, "missing.conf"),
			wantNode:    "node-a.example",
			wantWhy:     "no kubeconfig",
		},
		{
			name:     "the kubelet's --hostname-override names the node, trimmed and lower-cased",
			g:        globalOptions{Kubeconfig: flagCfg},
			cfg:      kubelet(map[string]string{"hostname-override": " Worker-7 "}),
			wantHost: "https://flag:6443", wantOrigin: "--kubeconfig " + flagCfg, wantNode: "worker-7",
		},
		{
			name:     "--node-name wins over the kubelet's --hostname-override",
			g:        globalOptions{Kubeconfig: flagCfg, NodeName: "N1"},
			cfg:      kubelet(map[string]string{"hostname-override": "worker-7"}),
			wantHost: "https://flag:6443", wantOrigin: "--kubeconfig " + flagCfg, wantNode: "n1",
		},
		{
			name:     "an unreadable kubelet kubeconfig leaves no pod source, with the reason",
			cfg:      kubelet(map[string]string{"kubeconfig": broken}),
			wantNode: "node-a.example",
			wantWhy:  "kubelet command line (pid 77): " + broken,
		},
		{
			name:     "in a pod, a kubelet kubeconfig the pod does not mount gives way to the in-cluster config",
			cfg:      kubelet(map[string]string{"kubeconfig": filepath.Join(dir, "host-only.conf")}),
			env:      map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"},
			wantNode: "node-a.example",
			wantWhy:  "in-cluster config",
		},
		{
			name:     "--pod-source=off asks nothing",
			g:        globalOptions{Kubeconfig: flagCfg, PodSource: podSourceOff},
			wantWhy:  "off (--pod-source=off)",
			wantNode: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.g.PodSource == "" {
				tt.g.PodSource = podSourceAuto
			}
			f := &factory{Getenv: func(k string) string { return tt.env[k] }, DefaultKubeconfig: tt.defaultPath, Hostname: hostname}
			pc, err := resolvePodSource(f, &tt.g, tt.cfg)
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			host := ""
			if pc.Rest != nil {
				host = pc.Rest.Host
			}
			if host != tt.wantHost || pc.Origin != tt.wantOrigin && tt.wantHost != "" || pc.NodeName != tt.wantNode {
				t.Errorf("got server %q origin %q node %q, want %q %q %q", host, pc.Origin, pc.NodeName, tt.wantHost, tt.wantOrigin, tt.wantNode)
			}
			if tt.wantWhy != "" && !strings.Contains(pc.Why, tt.wantWhy) {
				t.Errorf("why = %q, want it to contain %q", pc.Why, tt.wantWhy)
			}
			if tt.wantHost == "" && pc.Rest != nil {
				t.Errorf("got a pod source (%s), want none", pc.Rest.Host)
			}
		})
	}
}

// TestPodSourceBadInput: a --kubeconfig that cannot be read, or a
// --pod-source that is neither auto nor off, is bad input that names the
// flag (exit 2).
func TestPodSourceBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		g    globalOptions
		want string
	}{
		{"a missing --kubeconfig", globalOptions{PodSource: podSourceAuto, Kubeconfig: filepath.Join(dir, "nope.conf")}, "--kubeconfig: "},
		{"a broken --kubeconfig", globalOptions{PodSource: podSourceAuto, Kubeconfig: writeFile(t, "b.conf", "clusters: [")}, "--kubeconfig: "},
		{"an unknown --pod-source", globalOptions{PodSource: "api"}, `--pod-source: must be auto or off, got "api"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &factory{Getenv: func(string) string { return "" }, Hostname: func() (string, error) { return "n", nil }}
			_, err := resolvePodSource(f, &tt.g, nil)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want a one-line usage error starting %q", err, tt.want)
			}
		})
	}
}

// TestPodSourceWarnsOnceBesideAKubelet: with a kubelet running and no API
// server to ask, the first pass warns once on stderr and the snapshot says
// why; without a kubelet (not a Kubernetes node) nothing is printed.
func TestPodSourceWarnsOnceBesideAKubelet(t *testing.T) {
	for _, withKubelet := range []bool{true, false} {
		var errb bytes.Buffer
		f := &factory{Err: &errb, Getenv: func(string) string { return "" }, Hostname: func() (string, error) { return "n", nil }}
		var cfg *kubeletConfig
		if withKubelet {
			cfg = &kubeletConfig{Proc: &kubeletProcess{PID: 9, Flags: map[string]string{}}}
		}
		ps, err := startPodSource(t.Context(), f, &globalOptions{PodSource: podSourceAuto}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			p, err := ps.PodSource(t.Context(), engine.Snapshot{})
			if err != nil || p.Ready || !strings.Contains(p.Description, "no kubeconfig") {
				t.Fatalf("pod source = %+v, %v; want not ready, saying there is no kubeconfig", p, err)
			}
		}
		ps.Stop()
		lines := strings.Count(errb.String(), "\n")
		if withKubelet && (lines != 1 || !strings.Contains(errb.String(), "pod source: none: no kubeconfig")) {
			t.Errorf("beside a kubelet: stderr %q, want one warning", errb.String())
		}
		if !withKubelet && lines != 0 {
			t.Errorf("without a kubelet: stderr %q, want nothing", errb.String())
		}
	}
}

// TestKubeconfigCredentialsMustBeTrusted checks that a kubeconfig nodegc
// found (the kubelet's, the default) is used only when it, and the exec
// plugin or token file its user names, are root's alone; the refusal says
// which and why. The operator's --kubeconfig is used as given.
func TestKubeconfigCredentialsMustBeTrusted(t *testing.T) {
	dir := t.TempDir()
	eve := filepath.Join(dir, "eve")
	if err := os.Mkdir(eve, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(dir, name, content string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	evePlugin := file(eve, "plugin", "#!/bin/sh\nexit 1\n", 0o755)
	rootPlugin := file(dir, "plugin", "#!/bin/sh\nexit 1\n", 0o755)
	eveToken := file(eve, "token", "t", 0o644)
	withUser := func(user string) string {
		return strings.Replace(kubeconfigYAML("https://kubelet:6443"), "    token: t\n", user, 1)
	}
	execUser := func(cmd string) string {
		return "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: " + cmd + "\n"
	}
	eveConf := file(eve, "kubelet.conf", kubeconfigYAML("https://kubelet:6443"), 0o644)
	evePluginConf := file(dir, "plugin.conf", withUser(execUser(evePlugin)), 0o600)
	rootPluginConf := file(dir, "root-plugin.conf", withUser(execUser("./plugin")), 0o600) // relative: beside the file
	tokenConf := file(dir, "token.conf", withUser("    tokenFile: "+eveToken+"\n"), 0o600)
	if err := os.Chown(eve, 65534, 65534); err != nil {
		t.Skipf("chown needs root: %v", err)
	}
	tests := []struct {
		name       string
		g          globalOptions
		kubeconfig string // the kubelet's --kubeconfig
		wantWhy    string // "" means a pod source
		wantExec   string // the exec plugin that would run
	}{
		{name: "the kubelet's kubeconfig in another user's directory is not used", kubeconfig: eveConf,
			wantWhy: "kubelet command line (pid 77): " + eveConf + ": not used: " + eve + ": owned by uid 65534, not root"},
		{name: "an exec plugin another user can replace is refused, even in root's kubeconfig", kubeconfig: evePluginConf,
			wantWhy: `kubelet command line (pid 77): ` + evePluginConf + `: user "u": exec credential plugin ` + evePlugin + ` refused: ` + eve + `: owned by uid 65534, not root`},
		{name: "a token file another user can replace is refused", kubeconfig: tokenConf,
			wantWhy: `user "u": tokenFile refused: ` + eve + `: owned by uid 65534`},
		{name: "root's exec plugin beside root's kubeconfig is used, by the path that was checked", kubeconfig: rootPluginConf, wantExec: rootPlugin},
		{name: "the operator's --kubeconfig is used as given", g: globalOptions{Kubeconfig: evePluginConf}, wantExec: evePlugin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.g.PodSource = podSourceAuto
			f := &factory{Getenv: func(string) string { return "" }, Hostname: func() (string, error) { return "n", nil }}
			cfg := &kubeletConfig{Proc: &kubeletProcess{PID: 77, Flags: map[string]string{kubeletFlagKubeconfig: tt.kubeconfig}}}
			pc, err := resolvePodSource(f, &tt.g, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWhy != "" {
				if pc.Rest != nil || !strings.Contains(pc.Why, tt.wantWhy) {
					t.Errorf("rest %v, why %q; want no pod source because %q", pc.Rest != nil, pc.Why, tt.wantWhy)
				}
				return
			}
			if pc.Rest == nil {
				t.Fatalf("no pod source: %s", pc.Why)
			}
			if got := pc.Rest.ExecProvider; tt.wantExec != "" && (got == nil || got.Command != tt.wantExec) {
				t.Errorf("exec provider %+v, want command %s", got, tt.wantExec)
			}
		})
	}
}

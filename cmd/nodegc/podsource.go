package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/podsource"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/trust"
)

// defaultKubeletKubeconfig is where kubeadm puts the kubelet's kubeconfig;
// the pod source reads it when neither --kubeconfig nor the kubelet's
// command line names one.
const defaultKubeletKubeconfig = "/etc/kubernetes/kubelet.conf"

// Values of --pod-source.
const (
	podSourceAuto = "auto"
	podSourceOff  = "off"
)

// podSourceConfig is where the pod source's credentials and node name
// come from, with the words that say so.
type podSourceConfig struct {
	// Rest is the API client config; nil means no pod source.
	Rest *rest.Config
	// Origin says where Rest came from ("--kubeconfig /x", "kubelet
	// command line (pid 7): /etc/kubernetes/kubelet.conf", "in-cluster").
	Origin string
	// NodeName is this node's name as the kubelet computes it.
	NodeName string
	// Why says why there is no pod source when Rest is nil.
	Why string
}

// resolvePodSource finds the API credentials and the node name:
// --kubeconfig, else the running kubelet's --kubeconfig (in a pod, only
// when the pod has that file), else
// defaultKubeletKubeconfig when it exists, else the in-cluster config
// when nodegc runs in a pod. Only the operator's --kubeconfig is used as
// given; the others must pass loadKubeconfig's checks. An unreadable
// --kubeconfig or an invalid --pod-source is bad input (exit 2); anything
// else that fails, a refused credential among them, leaves no pod source,
// with the reason in Why.
func resolvePodSource(f *factory, g *globalOptions, cfg *kubeletConfig) (podSourceConfig, error) {
	switch g.PodSource {
	case podSourceAuto:
	case podSourceOff:
		return podSourceConfig{Why: "off (--pod-source=off)"}, nil
	default:
		return podSourceConfig{}, usageErrorf("--pod-source: must be %s or %s, got %q", podSourceAuto, podSourceOff, g.PodSource)
	}
	kn := cfg.node()
	name, err := nodeName(f, g.NodeName, kn.HostnameOverride)
	if err != nil {
		return podSourceConfig{}, err
	}
	pc := podSourceConfig{NodeName: name}
	// In a pod (the DaemonSet of deploy/, with hostPID) the kubelet's
	// command line names a file of the host's mount namespace, which the
	// pod does not mount: its own ServiceAccount is what it was granted.
	inPod := f.Getenv("KUBERNETES_SERVICE_HOST") != ""
	var path string
	switch {
	case g.Kubeconfig != "":
		path, pc.Origin = g.Kubeconfig, "--kubeconfig "+g.Kubeconfig
	case kn.Kubeconfig != "" && !(inPod && !exists(kn.Kubeconfig)):
		path, pc.Origin = kn.Kubeconfig, fmt.Sprintf("kubelet command line (pid %d): %s", kn.PID, kn.Kubeconfig)
	case f.DefaultKubeconfig != "" && exists(f.DefaultKubeconfig):
		path, pc.Origin = f.DefaultKubeconfig, f.DefaultKubeconfig
	case inPod:
		rc, err := rest.InClusterConfig()
		if err != nil {
			pc.Why = fmt.Sprintf("in-cluster config: %v", err)
			return pc, nil
		}
		pc.Rest, pc.Origin = rc, "in-cluster"
		return pc, nil
	default:
		pc.Why = "no kubeconfig (--kubeconfig, the kubelet's --kubeconfig, " + cmp.Or(f.DefaultKubeconfig, defaultKubeletKubeconfig) + ", in-cluster)"
		return pc, nil
	}
	rc, err := loadKubeconfig(path, g.Kubeconfig != "")
	if err != nil {
		if g.Kubeconfig != "" {
			return podSourceConfig{}, usageErrorf("--kubeconfig: %v", oneLine(err.Error()))
		}
		pc.Why = fmt.Sprintf("%s: %v", pc.Origin, oneLine(err.Error()))
		return pc, nil
	}
	pc.Rest = rc
	return pc, nil
}

// loadKubeconfig builds the API client config from the kubeconfig at
// path. The operator's own file (asGiven) is used as given. Any other (the
// kubelet's --kubeconfig, the default) is used only when trust.Path
// accepts it, and every file it names for credentials too: the CA, client
// certificates and keys, token files, and the binary of an exec credential
// plugin, resolved on PATH as client-go would run it. A non-root user who
// named their own kubeconfig on a process called kubelet would otherwise
// have root run their plugin, or send a token file of their choosing. The
// checks come first: client-go reads a token file while it builds the
// config, and runs a plugin at the first request. A refusal is an error
// saying which credential and why.
func loadKubeconfig(path string, asGiven bool) (*rest.Config, error) {
	if asGiven {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	if err := trust.Path(path); err != nil {
		return nil, fmt.Errorf("not used: %w", err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, err
	}
	if err := checkCredentials(cfg); err != nil {
		return nil, err
	}
	return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// checkCredentials refuses a kubeconfig that names a credential file or an
// exec plugin trust.Path does not accept, in any of its users and
// clusters: nodegc does not guess which one client-go will use. An exec
// plugin's command is replaced by the path that was checked, so the binary
// that runs is the one that passed.
func checkCredentials(cfg *clientcmdapi.Config) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Clusters)) {
		if ca := cfg.Clusters[name].CertificateAuthority; ca != "" {
			if err := trust.Path(ca); err != nil {
				return fmt.Errorf("cluster %q: certificate-authority refused: %w", name, err)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		ai := cfg.AuthInfos[name]
		for _, file := range []struct{ field, path string }{
			{"client-certificate", ai.ClientCertificate}, {"client-key", ai.ClientKey}, {"tokenFile", ai.TokenFile},
		} {
			if file.path == "" {
				continue
			}
			if err := trust.Path(file.path); err != nil {
				return fmt.Errorf("user %q: %s refused: %w", name, file.field, err)
			}
		}
		if ai.Exec == nil {
			continue
		}
		bin, err := exec.LookPath(ai.Exec.Command)
		if err == nil && !filepath.IsAbs(bin) {
			err = errors.New("not an absolute path")
		}
		if err == nil {
			err = trust.Path(bin)
		}
		if err != nil {
			return fmt.Errorf("user %q: exec credential plugin %s refused: %w", name, ai.Exec.Command, err)
		}
		ai.Exec.Command = bin
	}
	return nil
}

// nodeName is the node's name as the kubelet computes it
// (pkg/util/node.GetHostname): --node-name, else the kubelet's
// --hostname-override, else the hostname; trimmed and lower-cased.
func nodeName(f *factory, flag, override string) (string, error) {
	if n := strings.TrimSpace(flag); n != "" {
		return strings.ToLower(n), nil
	}
	if n := strings.TrimSpace(override); n != "" {
		return strings.ToLower(n), nil
	}
	hostname := os.Hostname
	if f.Hostname != nil {
		hostname = f.Hostname
	}
	h, err := hostname()
	if err != nil || strings.TrimSpace(h) == "" {
		return "", usageErrorf("--node-name: the hostname cannot be read (%v); name the node", err)
	}
	return strings.ToLower(strings.TrimSpace(h)), nil
}

// podSources is the pod source of one command: the informer when there
// is an API server to ask, else a fixed "not ready" answer that says why.
// Its first not-ready answer prints one warning, when a kubelet runs or
// a kubeconfig was given: there, container GC without the API server
// keeps what the kubelet would remove. The first answer that finds the
// API server's list at odds with the node (a wrong node name) always
// prints one.
type podSources struct {
	src *podsource.Source
	// client is the API client the source uses, nil without one; the
	// agent sends its Node events through it.
	client *kubeclient.Client
	// node is this node's name, as the kubelet names it.
	node string
	why  string
	warn func()
	// warnInconsistent prints the description of an inconsistent source.
	warnInconsistent func(description string)
}

// startPodSource starts the informer the resolved config allows. It never
// fails on the API server: one that cannot be reached makes the source
// not ready.
func startPodSource(ctx context.Context, f *factory, g *globalOptions, cfg *kubeletConfig) (*podSources, error) {
	pc, err := resolvePodSource(f, g, cfg)
	if err != nil {
		return nil, err
	}
	loud := g.Kubeconfig != "" || (cfg != nil && cfg.Proc != nil)
	ps := &podSources{}
	var once sync.Once
	ps.warn = func() {
		if loud {
			once.Do(func() {
				f.warnf("pod source: %s; deleted pods are not detected, container GC keeps to the limits", ps.describe())
			})
		}
	}
	var inconsistent sync.Once
	ps.warnInconsistent = func(description string) {
		inconsistent.Do(func() {
			f.warnf("%s (no pod is removed as deleted until it agrees)", description)
		})
	}
	if pc.Rest == nil {
		ps.why = pc.Why
		return ps, nil
	}
	pc.Rest.UserAgent = "nodegc/" + version
	// client-go logs through klog to stderr, which would tear the
	// dashboard and clutter plan's output: its lines go to --log-file.
	klog.LogToStderr(false)
	klog.SetOutput(cmp.Or[io.Writer](g.logOut, io.Discard))
	kc, err := kubeclient.New(pc.Rest)
	if err != nil {
		ps.why = fmt.Sprintf("%s: %v", pc.Origin, oneLine(err.Error()))
		return ps, nil
	}
	ps.client, ps.node = kc, pc.NodeName
	ps.src, err = podsource.Start(ctx, podsource.Options{Pods: kc.Pods(), NodeName: pc.NodeName, Server: pc.Rest.Host})
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// describe is the source's state in one line.
func (ps *podSources) describe() string {
	if ps.src != nil {
		return ps.src.Describe()
	}
	return "none: " + ps.why + ": limits only"
}

// PodSource is the engine.Options.PodSource of the command.
func (ps *podSources) PodSource(ctx context.Context, s engine.Snapshot) (engine.PodSource, error) {
	if ps.src == nil {
		ps.warn()
		return engine.PodSource{RemovablePodUIDs: []string{}, Description: ps.describe()}, nil
	}
	p, err := ps.src.PodSource(ctx, s)
	switch {
	case err != nil || p.Ready:
	case ps.src.Inconsistent() != nil:
		ps.warnInconsistent(p.Description)
	default:
		ps.warn()
	}
	return p, err
}

// Generation is the engine.Options.PodSourceGen of the command: the
// informer's (podsource.Source.Generation), or 0 without one, whose
// answer (not ready, limits only) never changes.
func (ps *podSources) Generation() uint64 {
	if ps.src == nil {
		return 0
	}
	return ps.src.Generation()
}

// Stop stops the informer, if any, without waiting for it.
func (ps *podSources) Stop() {
	if ps != nil && ps.src != nil {
		ps.src.Stop()
	}
}

// exists reports whether path names something that can be stat'ed.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

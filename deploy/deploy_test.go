// Package deploy holds the manifests `kubectl apply -k deploy/` installs;
// its tests decode them into the Kubernetes API's types and pin what the
// agent is granted.
package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/nodegc/nodegc/internal/kubetest"
)

// objects are the decoded manifests of deploy/, by kind.
type objects struct {
	Namespace      corev1.Namespace
	ServiceAccount corev1.ServiceAccount
	ClusterRole    rbacv1.ClusterRole
	Binding        rbacv1.ClusterRoleBinding
	Role           rbacv1.Role
	RoleBinding    rbacv1.RoleBinding
	DaemonSet      appsv1.DaemonSet
	Service        corev1.Service
	// CRD is the NodeGC CustomResourceDefinition (crd_test.go checks it;
	// apiextensions' Go types are not among nodegc's dependencies).
	CRD map[string]any
	// Policies and PolicyBindings keep each agent to its own node's
	// object, and each command to its writer's name.
	Policies       []admissionregistrationv1.ValidatingAdmissionPolicy
	PolicyBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding
	kinds          []string
}

// decode splits a multi-document stream and decodes each document
// strictly (an unknown or misspelt field is an error) into its type.
func decode(t *testing.T, name string, data []byte, o *objects) {
	t.Helper()
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s #%d: %v", name, i, err)
		}
		var into any
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 Namespace":
			into = &o.Namespace
		case "v1 ServiceAccount":
			into = &o.ServiceAccount
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			into = &o.ClusterRole
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			into = &o.Binding
		case "rbac.authorization.k8s.io/v1 Role":
			into = &o.Role
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			into = &o.RoleBinding
		case "apps/v1 DaemonSet":
			into = &o.DaemonSet
		case "v1 Service":
			into = &o.Service
		case "apiextensions.k8s.io/v1 CustomResourceDefinition":
			into = &o.CRD
		case "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy":
			o.Policies = append(o.Policies, admissionregistrationv1.ValidatingAdmissionPolicy{})
			into = &o.Policies[len(o.Policies)-1]
		case "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding":
			o.PolicyBindings = append(o.PolicyBindings, admissionregistrationv1.ValidatingAdmissionPolicyBinding{})
			into = &o.PolicyBindings[len(o.PolicyBindings)-1]
		default:
			t.Fatalf("%s #%d: unexpected %s %s", name, i, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("%s #%d (%s): %v", name, i, meta.Kind, err)
		}
		o.kinds = append(o.kinds, meta.Kind)
	}
}

// TestManifests decodes every file the kustomization lists and checks
// what issue 25 asks of each.
func TestManifests(t *testing.T) {
	var k struct {
		Resources []string `json:"resources"`
	}
	readYAML(t, "kustomization.yaml", &k)
	var o objects
	for _, f := range k.Resources {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, f, data, &o)
	}
	checkObjects(t, &o, "nodegc")
	if img := o.DaemonSet.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/nodegc/nodegc:"+releaseTag(t) {
		t.Errorf("daemonset.yaml's image %s, want the kustomization's version %s (applied alone, no tag is latest)", img, releaseTag(t))
	}
}

// TestKustomize renders deploy/ with the real kubectl (make kube builds
// it) and checks the result as TestManifests does, with the image set.
func TestKustomize(t *testing.T) {
	kubectl := kubetest.Binary(t, "kubectl")
	out, err := exec.Command(kubectl, "kustomize", ".").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	var o objects
	decode(t, "kubectl kustomize", out, &o)
	checkObjects(t, &o, "nodegc")
	for _, ns := range []string{o.ServiceAccount.Namespace, o.DaemonSet.Namespace, o.Service.Namespace} {
		if ns != "nodegc" {
			t.Errorf("a namespaced object is in %q, want nodegc", ns)
		}
	}
	if img := o.DaemonSet.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/nodegc/nodegc:"+releaseTag(t) {
		t.Errorf("image %s, want the kustomization's version %s", img, releaseTag(t))
	}
}

// releaseTag is the kustomization's image tag: a version (vMAJOR.MINOR.PATCH),
// never latest.
func releaseTag(t *testing.T) string {
	t.Helper()
	var k struct {
		Images []struct{ Name, NewTag string } `json:"images"`
	}
	readYAML(t, "kustomization.yaml", &k)
	if len(k.Images) != 1 || !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(k.Images[0].NewTag) {
		t.Fatalf("kustomization images %+v, want one with a version tag vX.Y.Z", k.Images)
	}
	return k.Images[0].NewTag
}

// TestMakeImageTagsTheVersion: `make image` at the kustomization's
// version tags the image with that version, the one deploy/ names.
func TestMakeImageTagsTheVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	v := releaseTag(t)
	out, err := exec.Command("make", "-n", "-C", "..", "image", "VERSION="+v).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--ref ghcr.io/nodegc/nodegc:"+v+" ") || !strings.Contains(string(out), "-X main.version="+v) {
		t.Errorf("make image VERSION=%s does not tag the image %s with it:\n%s", v, v, out)
	}
}

func checkObjects(t *testing.T, o *objects, ns string) {
	t.Helper()
	slices.Sort(o.kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "DaemonSet", "Namespace", "Role", "RoleBinding", "Service", "ServiceAccount",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"}; !slices.Equal(o.kinds, want) {
		t.Fatalf("kinds %v, want %v", o.kinds, want)
	}
	if o.Namespace.Name != ns {
		t.Errorf("namespace %q, kustomization's %q", o.Namespace.Name, ns)
	}

	// RBAC: exactly pods get/list/watch, nodes get and the NodeGC objects
	// (events: rbac_test.go). No token or access reviews: the agent takes
	// no one's credential.
	got := map[string][]string{}
	for _, r := range o.ClusterRole.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("unexpected rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	want := map[string][]string{
		"/pods":  {"get", "list", "watch"},
		"/nodes": {"get"},
		// Its NodeGC object: policy.yaml keeps it to its own node's.
		"nodegc.io/nodegcs":        {"get", "list", "watch", "create", "update", "patch"},
		"nodegc.io/nodegcs/status": {"get", "list", "watch", "create", "update", "patch"},
	}
	if len(got) != len(want) {
		t.Errorf("ClusterRole grants %v, want %v", got, want)
	}
	for res, verbs := range want {
		if !slices.Equal(got[res], verbs) {
			t.Errorf("ClusterRole: %s %v, want %v", res, got[res], verbs)
		}
	}
	b := o.Binding
	if b.RoleRef.Name != o.ClusterRole.Name || len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" ||
		b.Subjects[0].Name != o.ServiceAccount.Name || b.Subjects[0].Namespace != ns {
		t.Errorf("binding %+v does not bind %s to %s/%s", b, o.ClusterRole.Name, ns, o.ServiceAccount.Name)
	}

	checkPolicy(t, o)

	ds := o.DaemonSet
	spec := ds.Spec.Template.Spec
	if spec.ServiceAccountName != o.ServiceAccount.Name {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	if !spec.HostPID || spec.PriorityClassName != "system-node-critical" {
		t.Errorf("hostPID %v, priorityClassName %q", spec.HostPID, spec.PriorityClassName)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != corev1.TolerationOpExists || spec.Tolerations[0].Key != "" || spec.Tolerations[0].Effect != "" {
		t.Errorf("tolerations %+v, want one that tolerates every taint", spec.Tolerations)
	}
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	// A small number, not a share of the fleet; no surge (two agents on
	// a node); each new agent Ready for a while before the next wave.
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxUnavailable == nil ||
		ru.MaxUnavailable.Type != intstr.Int || ru.MaxUnavailable.IntValue() > 20 || ru.MaxSurge == nil || ru.MaxSurge.String() != "0" || ds.Spec.MinReadySeconds < 10 {
		t.Errorf("update strategy %+v, minReadySeconds %d", ds.Spec.UpdateStrategy, ds.Spec.MinReadySeconds)
	}
	if !slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "--image-gc-margin=5") {
		t.Errorf("args %v: the agent's band is not set below the kubelet's", ds.Spec.Template.Spec.Containers[0].Args)
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v || o.Service.Spec.Selector[k] != v {
			t.Errorf("selector %s=%s: template %q, service %q", k, v, ds.Spec.Template.Labels[k], o.Service.Spec.Selector[k])
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--node-name=$(NODE_NAME)") {
		t.Errorf("args %q do not pass the node name", args)
	}
	env := map[string]*corev1.EnvVarSource{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom
	}
	if vf := env["NODE_NAME"]; vf == nil || vf.FieldRef == nil || vf.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME is not the downward API's spec.nodeName: %+v", vf)
	}
	// The metrics port is below 1024, net.ipv4.ip_unprivileged_port_start's
	// default: on the node's network only root may bind it, so no other
	// user's program can take it while the agent restarts.
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || !strings.Contains(args, "--metrics-bind-address=:1017") || c.Ports[0].ContainerPort != 1017 {
		t.Errorf("ports %+v, args %q", c.Ports, args)
	}
	if sp := o.Service.Spec.Ports; len(sp) != 1 || sp[0].TargetPort.String() != "metrics" {
		t.Errorf("service ports %+v", sp)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("probe %s: %+v", name, p)
		}
	}
	// Requests and a memory limit (the agent's measured figures,
	// docs/performance.md), the limit above the request; no CPU limit, so a pass
	// is never throttled.
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().Cmp(*c.Resources.Requests.Memory()) <= 0 ||
		c.Resources.Requests.Cpu().IsZero() || !c.Resources.Limits.Cpu().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE", "NET_BIND_SERVICE"}) {
		t.Errorf("securityContext %+v", sc)
	}

	// Each host path mounted where the agent looks for it, read-only
	// where it only reads.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			t.Errorf("volume %s is not a hostPath", v.Name)
			continue
		}
		if m := mounts[v.Name]; m.MountPath != v.HostPath.Path {
			t.Errorf("volume %s: host %s mounted at %q", v.Name, v.HostPath.Path, m.MountPath)
		}
	}
	for path, readOnly := range map[string]bool{
		"/run/containerd":              false,
		"/var/lib/kubelet/config.yaml": true,
		"/var/log/pods":                false,
		"/var/log/containers":          false,
		"/var/lib/nodegc":              false,
		"/var/lib/containerd":          true,
	} {
		found := false
		for _, m := range c.VolumeMounts {
			if m.MountPath == path {
				found = true
				if m.ReadOnly != readOnly {
					t.Errorf("%s: readOnly %v, want %v", path, m.ReadOnly, readOnly)
				}
			}
		}
		if !found {
			t.Errorf("%s is not mounted", path)
		}
	}
	if len(spec.Volumes) != 6 || len(c.VolumeMounts) != 6 {
		t.Errorf("%d volumes, %d mounts; want the six above", len(spec.Volumes), len(c.VolumeMounts))
	}
}

// TestServiceMonitorExample: the example selects the metrics Service's
// labels and port by name, and is not in the kustomization.
func TestServiceMonitorExample(t *testing.T) {
	var sm unstructured.Unstructured
	readYAML(t, filepath.Join("examples", "servicemonitor.yaml"), &sm.Object)
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetKind() != "ServiceMonitor" {
		t.Fatalf("%s %s", sm.GetAPIVersion(), sm.GetKind())
	}
	var o objects
	data, err := os.ReadFile("service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, "service.yaml", data, &o)
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	labels := map[string]string{"app.kubernetes.io/name": "nodegc"} // the kustomization's labels
	for k, v := range o.Service.Labels {
		labels[k] = v
	}
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("selector %s=%s, service has %q", k, v, labels[k])
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != o.Service.Spec.Ports[0].Name {
		t.Errorf("endpoints %v, service port %s", eps, o.Service.Spec.Ports[0].Name)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	readYAML(t, "kustomization.yaml", &k)
	for _, r := range k.Resources {
		if strings.Contains(r, "examples") {
			t.Errorf("kustomization lists %s: applying would need the Prometheus Operator's CRDs", r)
		}
	}
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/nodeevents"
)

// grants flattens RBAC rules into "group/resource" → verbs, and fails on a
// rule that names resources by name or non-resource URLs.
func grants(t *testing.T, what string, rules []rbacv1.PolicyRule) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("%s: unexpected rule %+v", what, r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	return got
}

// checkGrants fails unless got is exactly want.
func checkGrants(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s grants %v, want %v", what, got, want)
	}
	for res, verbs := range want {
		if !slices.Equal(got[res], verbs) {
			t.Errorf("%s: %s %v, want %v", what, res, got[res], verbs)
		}
	}
}

// checkEventsRBAC: the agent may create events.k8s.io events in the
// namespace it posts them to and nowhere else: no events in the
// ClusterRole, no patch (it sends no series), no core-group events.
func checkEventsRBAC(t *testing.T, o *objects) {
	t.Helper()
	for res := range grants(t, "ClusterRole "+o.ClusterRole.Name, o.ClusterRole.Rules) {
		if res == "/events" || res == "events.k8s.io/events" {
			t.Errorf("ClusterRole %s grants %s in every namespace; the agent creates events in %s only", o.ClusterRole.Name, res, nodeevents.Namespace)
		}
	}
	if o.Role.Namespace != nodeevents.Namespace {
		t.Errorf("Role %s is in namespace %q, the agent posts its events to %q", o.Role.Name, o.Role.Namespace, nodeevents.Namespace)
	}
	checkGrants(t, "Role "+o.Role.Name, grants(t, "Role "+o.Role.Name, o.Role.Rules), map[string][]string{"events.k8s.io/events": {"create"}})
	b := o.RoleBinding
	if b.Namespace != o.Role.Namespace || b.RoleRef.Kind != "Role" || b.RoleRef.Name != o.Role.Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != o.ServiceAccount.Name || b.Subjects[0].Namespace != o.ServiceAccount.Namespace {
		t.Errorf("RoleBinding %+v does not bind Role %s/%s to %s/%s alone", b, o.Role.Namespace, o.Role.Name, o.ServiceAccount.Namespace, o.ServiceAccount.Name)
	}
}

// TestAgentEventsRBAC: the agent's events are granted as it uses them:
// create, events.k8s.io, in the namespace nodeevents posts to.
func TestAgentEventsRBAC(t *testing.T) {
	var o objects
	data, err := os.ReadFile("rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, "rbac.yaml", data, &o)
	checkEventsRBAC(t, &o)
}

// TestKustomizeKeepsTheEventsRoleInItsNamespace renders deploy/ with the
// real kubectl: kustomize's namespace must not move the events Role and
// its binding out of the namespace the agent posts to.
func TestKustomizeKeepsTheEventsRoleInItsNamespace(t *testing.T) {
	kubectl := kubetest.Binary(t, "kubectl")
	out, err := exec.Command(kubectl, "kustomize", ".").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	var o objects
	decode(t, "kubectl kustomize", out, &o)
	checkEventsRBAC(t, &o)
}

// TestOperatorRBACExample: the operator's example grants what the fleet
// reads (the Nodes and the NodeGC objects, by list and watch) and what a
// command writes (a NodeGC's spec), and nothing on pods or their proxy:
// the fleet sends nothing to a node.
func TestOperatorRBACExample(t *testing.T) {
	var o objects
	path := filepath.Join("examples", "operator-rbac.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, path, data, &o)
	checkGrants(t, "ClusterRole "+o.ClusterRole.Name, grants(t, "ClusterRole "+o.ClusterRole.Name, o.ClusterRole.Rules), map[string][]string{
		"/nodes":            {"list", "watch"},
		"nodegc.io/nodegcs": {"get", "list", "watch", "update", "patch"},
	})
	if o.Role.Name != "" {
		t.Errorf("Role %s/%s: the fleet needs no namespaced right (no pod, no proxy)", o.Role.Namespace, o.Role.Name)
	}
	if b := o.Binding; b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != o.ClusterRole.Name || len(b.Subjects) == 0 {
		t.Errorf("ClusterRoleBinding %+v does not bind ClusterRole %s to anyone", b, o.ClusterRole.Name)
	}
}

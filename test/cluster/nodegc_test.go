package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/kubetest"
)

// policyName is deploy/policy.yaml's ValidatingAdmissionPolicy: a denial
// by it names it.
const policyName = "nodegc-agent-own-node"

// nodeGCs is a NodeGC client of the API server as the holder of token.
func (c *cluster) nodeGCs(t testing.TB, token string) kubeclient.NodeGCs {
	t.Helper()
	kc, err := kubeclient.New(&rest.Config{Host: c.cp.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: c.cp.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	return kc.NodeGCs()
}

// adminNodeGCs is a NodeGC client of system:masters.
func (c *cluster) adminNodeGCs(t testing.TB) kubeclient.NodeGCs { return c.nodeGCs(t, adminToken) }

// waitNodeGC waits until the node's object satisfies cond and returns it.
func (c *cluster) waitNodeGC(t *testing.T, what string, cond func(*v1alpha1.NodeGC) bool) *v1alpha1.NodeGC {
	t.Helper()
	objs := c.adminNodeGCs(t)
	var obj *v1alpha1.NodeGC
	var err error
	if !kubetest.WaitFor(4*time.Minute, func() bool {
		obj, err = objs.Get(t.Context(), c.nodeName)
		return err == nil && cond(obj)
	}) {
		t.Fatalf("NodeGC %s: %s never came (last read %+v, %v); agent log:\n%s", c.nodeName, what, obj, err, c.agentLog())
	}
	return obj
}

// TestNodeGCObjectFollowsThePasses: the agent creates its node's NodeGC
// object (deploy/crd.yaml), owned by the Node, and writes its status: the
// band it read from the kubelet's config, the image fs, the pod source;
// the image fs filled past the high threshold, the agent's image pass
// that frees it reaches the object. kubectl get nodegcs shows the node's
// row.
func TestNodeGCObjectFollowsThePasses(t *testing.T) {
	c := sharedCluster(t)
	c.waitAgentReady(t)
	node, err := c.cs.CoreV1().Nodes().Get(t.Context(), c.nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj := c.waitNodeGC(t, "a status with a synced pod source and an image pass", func(o *v1alpha1.NodeGC) bool {
		return o.Status.HeartbeatTime != nil && o.Status.PodSource == "synced" && o.Status.LastImagePass != nil
	})
	if refs := obj.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].Name != c.nodeName || refs[0].UID != node.UID {
		t.Errorf("owner references %+v, want the Node %s (%s)", refs, c.nodeName, node.UID)
	}
	st := obj.Status
	if st.Band != (v1alpha1.Band{High: imageGCHigh, Low: imageGCLow}) || st.ImageFs == nil || st.ImageFs.CapacityBytes <= 0 ||
		st.Version != testVersion || st.StartedAt == nil {
		t.Errorf("status %+v, image fs %+v", st, st.ImageFs)
	}

	c.importImages(t, 16, 4<<20, "nodegcobj")
	filled := time.Now().Truncate(time.Second) // the status's times are whole seconds
	c.fillPastHigh(t)
	obj = c.waitNodeGC(t, "the image pass that freed down to the low threshold", func(o *v1alpha1.NodeGC) bool {
		p := o.Status.LastImagePass
		return p != nil && p.Removed > 0 && !p.At.Time.Before(filled)
	})
	p, fs := obj.Status.LastImagePass, obj.Status.ImageFs
	if p.Result != "success" || p.Reason != "threshold" || p.Trigger != "periodic" || p.FreedBytes <= 0 || p.TargetBytes <= 0 ||
		fs == nil || fs.UsagePercent > imageGCLow-imageGCMargin {
		t.Errorf("last image pass %+v, image fs %+v: want a periodic pass that met its threshold target, at most %d%% after it", p, fs, imageGCLow-imageGCMargin)
	}

	out, err := exec.Command(kubetest.Binary(t, "kubectl"), "--kubeconfig="+c.cp.Admin, "get", "nodegcs").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get nodegcs: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME USAGE HIGH LOW IMAGE-PASS RESULT DEAD PAUSED PRESSURE-AT HEARTBEAT" ||
		!strings.HasPrefix(lines[1], c.nodeName+" ") {
		t.Errorf("kubectl get nodegcs:\n%s", out)
	}
}

// TestNodeGCOnlyItsOwnNode: a token of the agent's ServiceAccount bound
// to its pod on this node (as the kubelet gets the agent's) may write
// this node's NodeGC, and no other node's: deploy/policy.yaml denies
// creating, updating (object and status) and deleting another's. A token
// of the same account bound to no pod names no node and writes none.
// Delete, which the agent is not granted, is granted here for the test
// alone, so that it is the policy that denies it.
func TestNodeGCOnlyItsOwnNode(t *testing.T) {
	c := sharedCluster(t)
	agent := c.waitAgentReady(t)
	own := c.waitNodeGC(t, "the object", func(o *v1alpha1.NodeGC) bool { return o.Status.HeartbeatTime != nil })
	admin := c.adminNodeGCs(t)
	other, err := admin.Create(t.Context(), &v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: "nodegc-other-node"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Resource().Delete(context.Background(), other.Name, metav1.DeleteOptions{}) })

	bound := c.nodeGCs(t, c.agentToken(t, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: agent.Name, UID: agent.UID}))
	unbound := c.nodeGCs(t, c.agentToken(t, nil))
	ctx := t.Context()
	c.grantAgentDelete(t)
	// RBAC's cache takes the grant a moment later: a delete of no object
	// is then NotFound, no longer Forbidden.
	if !kubetest.WaitFor(30*time.Second, func() bool {
		return apierrors.IsNotFound(bound.Resource().Delete(ctx, "nodegc-no-such-node", metav1.DeleteOptions{}))
	}) {
		t.Fatal("the test's grant of delete never took effect")
	}
	denied := func(what, reason string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policyName) || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: %v; want a denial by %s (%s)", what, err, policyName, reason)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	_, err = bound.Create(ctx, &v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: "nodegc-third-node"}})
	denied("create another node's", "only its own node's", err)
	o := *other
	o.Status.PodSource = "synced"
	_, err = bound.UpdateStatus(ctx, &o)
	denied("update another node's status", "only its own node's", err)
	u, err := v1alpha1.ToUnstructured(other)
	if err != nil {
		t.Fatal(err)
	}
	u.SetLabels(map[string]string{"x": "y"})
	_, err = bound.Resource().Update(ctx, u, metav1.UpdateOptions{})
	denied("update another node's object", "only its own node's", err)
	denied("delete another node's", "only its own node's", bound.Resource().Delete(ctx, other.Name, metav1.DeleteOptions{}))

	got, err := bound.Get(ctx, c.nodeName)
	allowed("get its own", err)
	if err == nil {
		_, err = unbound.UpdateStatus(ctx, got)
		denied("update its own with a token bound to no pod", "names no node", err)
		_, err = bound.UpdateStatus(ctx, got)
		allowed("update its own status", err)
	}
	// The object is read as it is stored, so that the write changes its
	// annotations alone: the API server names one denial only, the first
	// in its map order of policies, so a write another policy denies too
	// would not test this one.
	if mine, err := bound.Resource().Get(ctx, c.nodeName, metav1.GetOptions{}); err == nil {
		mine.SetAnnotations(map[string]string{"padding": strings.Repeat("x", 100<<10)})
		_, err = bound.Resource().Update(ctx, mine, metav1.UpdateOptions{})
		denied("annotate its own", "labels or annotations", err)
	}
	allowed("delete its own", bound.Resource().Delete(ctx, c.nodeName, metav1.DeleteOptions{}))
	_, err = bound.Create(ctx, &v1alpha1.NodeGC{ObjectMeta: metav1.ObjectMeta{Name: c.nodeName, OwnerReferences: own.OwnerReferences}})
	if !apierrors.IsAlreadyExists(err) { // the agent may have made it again first
		allowed("create its own", err)
	}
}

// TestNodeGCTypedWriteKeepsItsCommand: a user other than the one a
// command names reads a NodeGC into the Go types, which leave a false
// spec.pass.preview out, and writes it back with a label: the schema
// defaults the preview, so the command is the stored one and
// nodegc-command-by lets the write through. The object is of no node's
// agent, so no pass runs.
func TestNodeGCTypedWriteKeepsItsCommand(t *testing.T) {
	c := sharedCluster(t)
	ctx := t.Context()
	admin := c.adminNodeGCs(t)
	name := "nodegc-typed-write"
	created, err := admin.Resource().Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": name},
		// As fleet.Commands.Pass writes it: every field, preview too.
		"spec": map[string]any{"pass": map[string]any{"id": "pass-typed-write", "kind": "images", "preview": false, "by": "admin"}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Resource().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if p, ok, _ := unstructured.NestedBool(created.Object, "spec", "pass", "preview"); !ok || p {
		t.Errorf("spec.pass %v, want preview false", created.Object["spec"])
	}

	writer := c.nodeGCs(t, c.writerToken(t))
	var obj *v1alpha1.NodeGC
	// RBAC's cache takes the grant a moment later.
	if !kubetest.WaitFor(30*time.Second, func() bool {
		obj, err = writer.Get(ctx, name)
		return err == nil
	}) {
		t.Fatalf("the writer's get: %v", err)
	}
	obj.Labels = map[string]string{"team": "storage"}
	u, err := v1alpha1.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "pass", "preview"); ok {
		t.Fatalf("the Go types kept a false preview: %v; the test needs a write that leaves it out", u.Object["spec"])
	}
	if _, err := writer.Resource().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a label written through the Go types by another user: %v", err)
	}
	if stored, err := admin.Resource().Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if p, ok, _ := unstructured.NestedBool(stored.Object, "spec", "pass", "preview"); !ok || p || stored.GetLabels()["team"] != "storage" {
		t.Errorf("stored after the write: labels %v, spec %v; want the label, and preview false as the schema defaults it", stored.GetLabels(), stored.Object["spec"])
	}
	// A new command in another's name is still denied.
	if fresh, err := writer.Get(ctx, name); err == nil {
		fresh.Spec.Pass.ID = "pass-typed-write-2"
		u, err := v1alpha1.ToUnstructured(fresh)
		if err != nil {
			t.Fatal(err)
		}
		_, err = writer.Resource().Update(ctx, u, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "spec.pass.by must name the user who asks") {
			t.Errorf("a new pass in admin's name by another user: %v, want a denial", err)
		}
	} else {
		t.Error(err)
	}
}

// writerToken returns a token of a ServiceAccount of its own that may
// get and update nodegcs until the test ends.
func (c *cluster) writerToken(t *testing.T) string {
	t.Helper()
	name := "nodegc-test-writer"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	if _, err := c.cs.CoreV1().ServiceAccounts("default").Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cs.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	c.grantNodeGCs(t, name, "default", name, "get", "update")
	return c.saToken(t, "default", name, nil)
}

// agentToken returns a token of the agent's ServiceAccount, bound to
// ref (nil: to no object).
func (c *cluster) agentToken(t *testing.T, ref *authenticationv1.BoundObjectReference) string {
	t.Helper()
	return c.saToken(t, "nodegc", "nodegc", ref)
}

// saToken returns a token of the ServiceAccount namespace/name, bound to
// ref (nil: to no object).
func (c *cluster) saToken(t *testing.T, namespace, name string, ref *authenticationv1.BoundObjectReference) string {
	t.Helper()
	exp := int64(600)
	tr, err := c.cs.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp, BoundObjectRef: ref}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// grantAgentDelete grants the agent's ServiceAccount delete on nodegcs
// until the test ends.
func (c *cluster) grantAgentDelete(t *testing.T) {
	t.Helper()
	c.grantNodeGCs(t, "nodegc-test-delete", "nodegc", "nodegc", "delete")
}

// grantNodeGCs grants the ServiceAccount namespace/account verbs on
// nodegcs, through a ClusterRole and a binding both called name, until
// the test ends.
func (c *cluster) grantNodeGCs(t *testing.T, name, namespace, account string, verbs ...string) {
	t.Helper()
	rbac := c.cs.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.Group}, Resources: []string{v1alpha1.Resource}, Verbs: verbs}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: namespace}}}
	if _, err := rbac.ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// TestNodeGCCommands: a user who may update nodegcs asks through the
// object, in their own name (deploy/policy.yaml denies another's): a
// forced pass runs and its outcome reaches the status under its ID; a
// pause shows who asked and until when, and ends by itself.
func TestNodeGCCommands(t *testing.T) {
	c := sharedCluster(t)
	c.waitAgentReady(t)
	c.waitNodeGC(t, "the object", func(o *v1alpha1.NodeGC) bool { return o.Status.HeartbeatTime != nil })
	admin := c.adminNodeGCs(t)
	setSpec := func(spec v1alpha1.NodeGCSpec) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := admin.Get(t.Context(), c.nodeName)
			if err != nil {
				return err
			}
			obj.Spec = spec
			u, err := v1alpha1.ToUnstructured(obj)
			if err != nil {
				return err
			}
			_, err = admin.Resource().Update(t.Context(), u, metav1.UpdateOptions{})
			return err
		})
	}
	id := fmt.Sprintf("force-%d", time.Now().UnixNano())
	err := setSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: id, Kind: "containers", By: "mallory"}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "spec.pass.by must name the user who asks: admin") {
		t.Errorf("a pass asked in another's name: %v, want a denial", err)
	}
	if err := setSpec(v1alpha1.NodeGCSpec{Pass: &v1alpha1.PassCommand{ID: id, Kind: "containers", By: "admin"}}); err != nil {
		t.Fatal(err)
	}
	obj := c.waitNodeGC(t, "the forced pass's outcome", func(o *v1alpha1.NodeGC) bool {
		return o.Status.Command != nil && o.Status.Command.ID == id && o.Status.Command.Result != "running"
	})
	if o := obj.Status.Command; o.Result != "done" || o.Pass == nil || o.Pass.Trigger != "forced" || o.Pass.Kind != "containers" {
		t.Errorf("outcome %+v, pass %+v", o, o.Pass)
	}

	until := metav1.NewTime(time.Now().Add(20 * time.Second).Truncate(time.Second))
	pid := fmt.Sprintf("pause-%d", time.Now().UnixNano())
	if err := setSpec(v1alpha1.NodeGCSpec{Pause: &v1alpha1.PauseCommand{ID: pid, Until: until, By: "admin"}}); err != nil {
		t.Fatal(err)
	}
	obj = c.waitNodeGC(t, "the pause", func(o *v1alpha1.NodeGC) bool { return o.Status.Paused != nil })
	if p := obj.Status.Paused; p.ID != pid || p.By != "admin" || p.Until == nil || !p.Until.Equal(&until) {
		t.Errorf("paused %+v, want %s by admin until %v", p, pid, until)
	}
	obj = c.waitNodeGC(t, "the pause's end", func(o *v1alpha1.NodeGC) bool { return o.Status.Paused == nil })
	// The status's times are whole seconds.
	if obj.Status.HeartbeatTime.Before(&until) {
		t.Errorf("the pause ended by %v, before its end %v", obj.Status.HeartbeatTime, until)
	}
}

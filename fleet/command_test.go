package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet/fleettest"
)

// fakeCommands is Commands on client-go's fake dynamic client holding
// node n1's object; the API server's SelfSubjectReview names user.
func fakeCommands(t *testing.T, user string) (*Commands, *fake.FakeDynamicClient) {
	t.Helper()
	obj := nodeGC(t, "n1", now, nil)
	obj.SetAPIVersion(v1alpha1.APIVersion)
	obj.SetKind(v1alpha1.Kind)
	dyn := fleettest.Client(ObjectsResource, user, obj)
	return CommandsFor(dyn, func() time.Time { return now }), dyn
}

// spec is node n1's spec as the fake holds it.
func spec(t *testing.T, c *fake.FakeDynamicClient) v1alpha1.NodeGCSpec {
	t.Helper()
	u, err := c.Resource(ObjectsResource).Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := v1alpha1.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return o.Spec
}

// A pass, a preview, a pause and a resume each land in the node's
// object's spec in the name the API server gives the user, the status
// untouched; a pass after a preview is no preview (a merge patch keeps
// what it does not name); the user is asked once.
func TestCommandsWriteTheSpec(t *testing.T) {
	c, dyn := fakeCommands(t, "alice")
	ctx := context.Background()
	id, err := c.Pass(ctx, "n1", "full", true)
	if err != nil {
		t.Fatal(err)
	}
	if s := spec(t, dyn); s.Pass == nil || *s.Pass != (v1alpha1.PassCommand{ID: id, Kind: "full", Preview: true, By: "alice"}) || !strings.HasPrefix(id, "pass-20261129-120000-") {
		t.Errorf("after a preview: pass %+v, id %q", s.Pass, id)
	}
	id2, err := c.Pass(ctx, "n1", "images", false)
	if err != nil {
		t.Fatal(err)
	}
	if s := spec(t, dyn); id2 == id || s.Pass == nil || *s.Pass != (v1alpha1.PassCommand{ID: id2, Kind: "images", By: "alice"}) {
		t.Errorf("after a pass: %+v (id %q, the preview's %q)", s.Pass, id2, id)
	}
	until := now.Add(time.Hour)
	pid, err := c.Pause(ctx, "n1", until)
	if err != nil {
		t.Fatal(err)
	}
	s := spec(t, dyn)
	if p := s.Pause; p == nil || p.ID != pid || p.By != "alice" || !p.Until.Time.Equal(until) || s.Pass == nil || s.Pass.ID != id2 {
		t.Errorf("after a pause: %+v", s)
	}
	if err := c.Resume(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if s := spec(t, dyn); s.Pause != nil || s.Pass == nil {
		t.Errorf("after a resume: %+v", s)
	}
	reviews := 0
	for _, a := range dyn.Actions() {
		if a.GetResource() == ReviewsResource {
			reviews++
		}
		if a.GetSubresource() == "status" {
			t.Errorf("a command wrote the status: %v", a)
		}
	}
	if reviews != 1 {
		t.Errorf("%d SelfSubjectReviews, want one", reviews)
	}
	u, _ := dyn.Resource(ObjectsResource).Get(ctx, "n1", metav1.GetOptions{})
	if o, _ := v1alpha1.FromUnstructured(u); o.Status.HeartbeatTime == nil {
		t.Error("the status was changed")
	}
}

// A refused command is one line naming what it lacked: the verb and
// resource RBAC did not grant (403), the object a node without an agent
// lacks, the admission policy's word; a user the API server may not name
// is the review's verb and resource.
func TestCommandErrors(t *testing.T) {
	forbidden := func(msg string) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "nodegc.io", Resource: "nodegcs"}, "n1", errors.New(msg))
	}
	for _, tc := range []struct {
		name, node string
		resource   string
		err        error
		want       string
	}{
		{"RBAC", "n1", "nodegcs", forbidden(`User "bob" cannot patch resource "nodegcs" in API group "nodegc.io" at the cluster scope`),
			"your kubeconfig may not patch nodegcs.nodegc.io (forbidden)"},
		{"admission", "n1", "nodegcs", forbidden("ValidatingAdmissionPolicy 'nodegc-command-by' with binding 'nodegc-command-by' denied request: spec.pass.by must name the user who asks: bob"),
			"denied by the admission policy"},
		{"no object", "n9", "", nil, "node n9 has no NodeGC object (no agent to ask)"},
		{"no review", "n1", "selfsubjectreviews", apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, "", errors.New("no")),
			"your kubeconfig may not create selfsubjectreviews.authentication.k8s.io (forbidden)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, dyn := fakeCommands(t, "bob")
			if tc.err != nil {
				verb := "patch"
				if tc.resource == "selfsubjectreviews" {
					verb = "create"
				}
				dyn.PrependReactor(verb, tc.resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			}
			_, err := c.Pass(context.Background(), tc.node, "containers", false)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// Package fleettest holds the fleet's test double: client-go's fake
// dynamic client serving NodeGC objects to the fleet's commands and a
// SelfSubjectReview that names the user, for the fleet's tests and its
// view's.
package fleettest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

// Client returns a fake dynamic client holding objs (NodeGC objects,
// unstructured) under resource, whose SelfSubjectReview answers user.
func Client(resource schema.GroupVersionResource, user string, objs ...runtime.Object) *fake.FakeDynamicClient {
	dyn := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{resource: v1alpha1.ListKind}, objs...)
	dyn.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
			"status": map[string]any{"userInfo": map[string]any{"username": user}}}}, nil
	})
	return dyn
}

package kubeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

// Node gets the Node named name: the agent's NodeGC object is owned by
// it, by its UID.
func (c *Client) Node(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(out)
	return out, err
}

// NodeGCs returns the NodeGC objects (api/v1alpha1), through the dynamic
// client: a CRD's objects need no generated client.
func (c *Client) NodeGCs() NodeGCs {
	return NodeGCs{c.dynamic.Resource(v1alpha1.GroupVersionResource)}
}

// NodeGCs reads and writes NodeGC objects as their Go type. Its errors
// are the API server's (apierrors.IsNotFound, IsConflict, ...) or a
// conversion's.
type NodeGCs struct{ r dynamic.ResourceInterface }

// Resource is the dynamic client of the objects, for list and watch.
func (n NodeGCs) Resource() dynamic.ResourceInterface { return n.r }

// Get gets the object named name.
func (n NodeGCs) Get(ctx context.Context, name string) (*v1alpha1.NodeGC, error) {
	u, err := n.r.Get(ctx, name, metav1.GetOptions{})
	return fromUnstructured(u, err)
}

// Create creates obj; the API server ignores its status (the status
// subresource), which UpdateStatus then writes.
func (n NodeGCs) Create(ctx context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error) {
	u, err := v1alpha1.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return fromUnstructured(n.r.Create(ctx, u, metav1.CreateOptions{}))
}

// UpdateStatus replaces obj's status, if obj's resourceVersion is still
// the object's (else a conflict).
func (n NodeGCs) UpdateStatus(ctx context.Context, obj *v1alpha1.NodeGC) (*v1alpha1.NodeGC, error) {
	u, err := v1alpha1.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return fromUnstructured(n.r.UpdateStatus(ctx, u, metav1.UpdateOptions{}))
}

func fromUnstructured(u *unstructured.Unstructured, err error) (*v1alpha1.NodeGC, error) {
	if err != nil {
		return nil, err
	}
	return v1alpha1.FromUnstructured(u)
}

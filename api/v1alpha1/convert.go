package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToUnstructured returns n as an unstructured object for the dynamic
// client, with its apiVersion and kind set.
func ToUnstructured(n *NodeGC) (*unstructured.Unstructured, error) {
	c := *n
	c.APIVersion, c.Kind = APIVersion, Kind
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return nil, fmt.Errorf("convert NodeGC %s: %w", n.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// FromUnstructured returns the NodeGC u holds. An object of another kind,
// or with a field of the wrong type (an agent that wrote it badly), is an
// error naming the object.
func FromUnstructured(u *unstructured.Unstructured) (*NodeGC, error) {
	if gvk := u.GroupVersionKind(); gvk != GroupVersionKind {
		return nil, fmt.Errorf("object %s is a %s, not a %s", u.GetName(), gvk, GroupVersionKind)
	}
	var n NodeGC
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &n); err != nil {
		return nil, fmt.Errorf("read NodeGC %s: %w", u.GetName(), err)
	}
	return &n, nil
}

// Package v1alpha1 is the NodeGC custom resource (group nodegc.io,
// version v1alpha1): one small, cluster-scoped object per node, named
// after its node and owned by it, that the node's agent writes and the
// fleet view reads with one list and a watch (deploy/crd.yaml holds its
// schema). It is read and written as unstructured objects through
// client-go's dynamic client (ToUnstructured, FromUnstructured), so the
// types need no generated clients or deep copies.
package v1alpha1

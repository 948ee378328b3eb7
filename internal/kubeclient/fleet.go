package kubeclient

import (
	"context"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What `nodegc fleet` and the agent's remote authorization use: nodes
// (list), pods of one namespace (list), GET through the pods proxy, and a
// raw JSON POST (the token and access reviews, decoded by their callers
// into structs of their own, so that no further API group is linked).

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) (*corev1.NodeList, error) {
	out := &corev1.NodeList{}
	opts := metav1.ListOptions{ResourceVersion: "0"}
	err := c.core.Get().Resource("nodes").VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

// PodsIn lists the pods of namespace ns that match the label selector.
func (c *Client) PodsIn(ctx context.Context, ns, selector string) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	opts := metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"}
	err := c.core.Get().Namespace(ns).Resource("pods").VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

// ProxyPath is the API server's path of the pods proxy to port of pod
// ns/name, without a trailing slash.
func ProxyPath(ns, name string, port int) string {
	return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(name+":"+strconv.Itoa(port)) + "/proxy"
}

// ProxyGet GETs path of the pod's port through the API server's pods
// proxy, within timeout, and returns the body of a 2xx reply.
func (c *Client) ProxyGet(ctx context.Context, ns, name string, port int, path string, timeout time.Duration) ([]byte, error) {
	return c.core.Get().AbsPath(ProxyPath(ns, name, port) + path).Timeout(timeout).DoRaw(ctx)
}

// PostJSON POSTs a JSON body to an API path and returns the reply's body.
func (c *Client) PostJSON(ctx context.Context, path string, body []byte) ([]byte, error) {
	return c.core.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx)
}

// Package kubeclient is nodegc's client for the API server: pods
// (core/v1, list and watch, for the pod source) and Events
// (events.k8s.io/v1, create, for the agent), and nothing else.
//
// It is a rest.RESTClient on a scheme of its own that holds only those
// two groups. client-go's typed clients, its clientset and its events
// recorder (tools/events) all go through k8s.io/client-go/kubernetes/scheme,
// which registers every API group the API server serves: linking it made
// the binary 56 MB stripped, for one informer on pods, and its init
// alone took 14 ms of every start. k8s.io/client-go/rest, tools/cache and
// tools/clientcmd link no API group.
package kubeclient

// Package metrics serves what nodegc's passes measured as Prometheus
// metrics, and the agent's health endpoints.
//
// A Collector keeps the latest state under a mutex: the agent feeds it the
// scheduler's pass reports and status, the snapshots the passes took, and
// the event stream's state; a scrape only copies that state out (one
// method, Update, in node_exporter's shape), so it never reads the node.
// Labels are bounded: kinds, triggers, results and reasons, never an
// image, pod, node or path name. Names are nodegc_<subsystem>_<name>_<unit>
// and counters end in _total, as `promtool check metrics` wants.
package metrics

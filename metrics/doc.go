// Package metrics serves what nodegc's passes measured as Prometheus
// metrics, and the agent's health endpoints.
//
// A Collector is a prometheus.Collector: what accumulates (counters,
// duration histograms, the time of each kind's latest pass) is in
// client_golang's vectors, updated as the agent feeds it the scheduler's
// pass reports; what is latest (the last attempt, snapshot, scheduler
// status and event stream state) is kept under a mutex and sent at scrape
// time with the journal's and the pod source's counts. A scrape reads only
// that, so it never reads the node.
//
// Labels are bounded: kinds, triggers, results and reasons, never an
// image, pod, node or path name. Names are nodegc_<subsystem>_<name>_<unit>
// and counters end in _total, as `promtool check metrics` wants.
package metrics

// Package forecast answers two questions about a node's image
// filesystem before they matter: when will usage reach the image GC high
// threshold (GC will act), and when will what GC cannot remove reach the
// kubelet's imagefs.available eviction line (DiskPressure that no GC
// prevents: the eviction manager's own reclaim of unused images,
// pkg/kubelet/eviction/eviction_manager.go reclaimNodeLevelResources,
// would not bring it back).
//
// It is pure: a History of Readings (the image filesystem and the bytes a
// reclaim-all pass could free, at each reading), bounded and downsampled,
// its on-disk form, and Predict, a fit of the growth between GC passes
// with its uncertainty. The agent takes the readings, keeps the file in
// the state dir and serves the forecasts; docs/forecast.md says which
// method and why, with its backtest.
package forecast

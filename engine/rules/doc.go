// Package rules is the engine's pure rules: the kubelet's image,
// container, sandbox and log GC planners, the disk reserve check, and the
// explanation of a plan row by row. Each is a function of a snapshot, a
// policy and a time, with no I/O, clock or lock, so that a dry-run and a
// pass can never disagree about what they select.
package rules

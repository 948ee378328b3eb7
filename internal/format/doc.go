// Package format is nodegc's one style for numbers a person reads: byte
// counts, IDs, ages, durations and percentages. The CLI tables, `nodegc
// cgroups`, the engine's cut-line wording and the dashboard all format
// through it, so that one quantity reads the same everywhere.
//
// The style: bytes in IEC units with one decimal ("512 B", "1.5 GiB"),
// durations with their two largest units ("45s", "12m5s", "3h10m",
// "2d4h"), ages as "3h10m ago" or "in 5m", IDs as crictl shortens them (12
// hex digits, no algorithm).
package format

// Package tui is nodegc's dashboard: a Bubble Tea program whose root Model
// routes messages to one component per pane (overview, images, containers,
// cgroups, events). It never talks to the runtime: it reads snapshots, plans
// them with the engine's pure planner, and sends commands (preview, apply,
// pause) to the scheduler through Controller. Every call runs in a tea.Cmd
// that captures its inputs and returns a typed message; results that a newer
// request has overtaken are dropped by sequence number.
package tui

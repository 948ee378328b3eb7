// Package executor applies a plan to the node: the engine's third room,
// beside the pure rules and the node's state. Run sets a pass up (its
// tasks in plan order, its journal readied by the Host, its views of the
// node), runs the tasks in a bounded pool (pinned, or the adaptive
// pool's knee), re-checks every item just before it removes it, and
// writes the pass's journal lines ahead of each removal. It reads what it
// needs of the engine from Deps, and never the Engine itself.
package executor

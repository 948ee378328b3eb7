// Package model is the engine's bottom room: the node snapshot, the
// policy, the plan and the runtime's contract, shared by the rules, the
// executor, the node's state and the wire codecs without an import
// between them. It holds types and their validation only; nothing here
// reads the node or decides what goes.
package model

// Package state is the node's state that nodegc keeps between passes and
// runs: the state dir (checked, locked, and the runtime's lock with it),
// the image records (firstDetected and lastUsed, which the kubelet keeps
// only in memory), the append-only deletion journal with its group
// commit, segments and counts, and the reconciliation of the intents an
// interrupted pass left open. It imports only engine/model; the engine
// and its executor write through a *Journal and read records through
// LoadRecords and UpdateRecords.
package state

// Package state is the node's state that nodegc keeps between passes and
// runs: the state dir (checked, locked, and the runtime's lock with it),
// the image records (firstDetected and lastUsed, which the kubelet keeps
// only in memory), the append-only deletion journal with its group
// commit, segments and counts, and the reconciliation of the intents an
// interrupted pass left open. Of the engine's rooms it imports only
// engine/model. The engine holds it through a *Dir, a *Journal and a
// *Reconciler, and keeps its records with LoadRecords, UpdateRecords and
// SaveRecords.
package state

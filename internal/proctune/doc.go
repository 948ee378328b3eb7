// Package proctune tunes the nodegc process's Go runtime for what it is
// doing: the dashboard's and the agent's GOGC, the dashboard's soft memory
// limit held near what it holds at rest (IdleMemory), one P while no pass
// runs (WhileIdle), garbage and the binary's unused pages handed back to
// the system after a refresh or a pass (Release), and profiles switched on
// by environment variables (Profile). Whatever the environment sets (GOGC,
// GOMEMLIMIT, GOMAXPROCS) is left alone. The figures behind each setting
// are in docs/performance.md.
package proctune

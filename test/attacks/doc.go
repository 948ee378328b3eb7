// Package attacks holds the adversarial review's findings (issue 8) as one
// table-driven test: each row is an attack on nodegc that once made it
// delete what must stay, lose or corrupt its state, hang or write where it
// should not, and that must now fail. Rows drive the engine's API, the CRI
// adapter against scripted or simulated runtimes, and the built binary.
package attacks

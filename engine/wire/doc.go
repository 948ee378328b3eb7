// Package wire is the engine's wire codecs: the NodeSnapshot decoder
// (whole, or with its long lists split over the cores) and the GCPlan
// writer, byte for byte what encoding/json writes. They read and write
// the model's types and decide nothing about them.
package wire

// Package netfault is the link fault layer: every connection of the
// cluster is wrapped by its process's Layer, which holds, delays, paces,
// stalls or resets the bytes toward a peer as the coordinator orders
// (netfault.go says exactly what each fault does). It is a leaf: wire,
// node, coord and chaos use it, and it imports none of them.
package netfault

// Coord is the name of the coordinator's end of a link.
const Coord = "coord"

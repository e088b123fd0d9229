//go:build !race

package node

// raceBuild reports a build with the race detector.
const raceBuild = false

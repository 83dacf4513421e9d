// Package version holds the build's version, set at link time by the Makefile.
package version

// Version is the release-controller version; "dev" when built without the Makefile.
var Version = "dev"

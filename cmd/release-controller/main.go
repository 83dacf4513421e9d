// Command release-controller turns component image builds into verified, published releases.
// Run `release-controller --help` for its subcommands.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

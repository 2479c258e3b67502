// Command gendoc writes docs/guarantees.md from the guarantee catalogue.
// Run it with `go generate ./scenarios`.
package main

import (
	"fmt"
	"os"

	"github.com/hookcert/hookcert/scenarios"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc OUTPUT.md")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], scenarios.CatalogueMarkdown(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

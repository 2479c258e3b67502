// Command gen renders the generated regions of the repository's Markdown
// files (package docs). Run it with `make generate`, or `go generate
// ./internal/docs`.
package main

import (
	"fmt"
	"os"

	"github.com/hookcert/hookcert/internal/docs"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen REPOSITORY-ROOT")
		os.Exit(2)
	}
	stale, err := docs.Stale(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
	for path, content := range stale {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "docs:", err)
			os.Exit(1)
		}
		fmt.Println("docs: rendered", path)
	}
}

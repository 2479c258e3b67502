// Command hookcert certifies webhook receivers: it simulates providers, runs the
// guarantee suite, and ships a reference receiver. See README.md.
package main

import (
	"os"

	"github.com/hookcert/hookcert/cmd/hookcert/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }

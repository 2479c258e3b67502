//go:build !unix

package pgprovision

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
)

// startLocal is unsupported where processes cannot be started as another user
// and signalled as a group.
func startLocal(_ context.Context, _ Options) (*server, error) {
	return nil, fmt.Errorf("not supported on %s", runtime.GOOS)
}

// staleResult is what a sweep for stale clusters did: nothing here, since no
// local cluster is ever started.
type staleResult struct{}

func (staleResult) notice() string { return "" }

func sweepStale(string, *slog.Logger) staleResult { return staleResult{} }

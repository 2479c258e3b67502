//go:build !unix

package pgprovision

import (
	"context"
	"fmt"
	"runtime"
)

// startLocal is unsupported where processes cannot be started as another user
// and signalled as a group.
func startLocal(_ context.Context, _ Options) (*server, error) {
	return nil, fmt.Errorf("not supported on %s", runtime.GOOS)
}

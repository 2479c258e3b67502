package redisobserve

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// go-redis logs some failures (a failed dial) on a logger of its own, shared
// by the whole process, besides returning them. The Reader's failures reach
// the caller as errors and the report; printed as well they would interleave
// with hookcert's output. So the first Open installs a logger that drops the
// lines about a Reader's server (its address in the line: dials run on a
// context of go-redis's own) or logged on a Reader's context, and prints every
// other line as go-redis's default logger does (stderr, "redis: "), so that
// another go-redis client in the same process, in library mode, keeps its own.

type quietKey struct{}

// quiet marks ctx as the Reader's.
func quiet(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

type filterLogger struct{ next *log.Logger }

var (
	installLogger sync.Once
	quietMu       sync.Mutex
	quietAddrs    = map[string]bool{}
)

func (l filterLogger) Printf(ctx context.Context, format string, v ...any) {
	if ctx != nil && ctx.Value(quietKey{}) != nil {
		return
	}
	msg := fmt.Sprintf(format, v...)
	quietMu.Lock()
	for a := range quietAddrs {
		if strings.Contains(msg, a) {
			quietMu.Unlock()
			return
		}
	}
	quietMu.Unlock()
	_ = l.next.Output(2, msg)
}

// quietLogs keeps go-redis from printing lines about addr.
func quietLogs(addr string) {
	installLogger.Do(func() {
		redis.SetLogger(filterLogger{next: log.New(os.Stderr, "redis: ", log.LstdFlags)})
	})
	quietMu.Lock()
	quietAddrs[addr] = true
	quietMu.Unlock()
}

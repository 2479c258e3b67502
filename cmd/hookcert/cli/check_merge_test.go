package cli

import (
	"strings"
	"testing"
)

// Bad --shard and --start-at values, and a merge of directories that hold no
// shard, are usage errors naming the flag.
func TestShardFlagsRefused(t *testing.T) {
	besideOthers(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"soak", "--config", "x.yaml", "--shard", "2/2"}, "--shard"},
		{[]string{"soak", "--config", "x.yaml", "--shard", "a"}, "--shard"},
		{[]string{"soak", "--config", "x.yaml", "--start-at", "noon"}, "--start-at"},
		{[]string{"soak", "--config", "x.yaml", "--shard", "1/2", "--concurrency", "4"}, "--start-at"},
		{[]string{"soak", "--demo", "--shard", "0/2", "--start-at", "2030-01-01T00:00:00Z"}, "needs --config"},
		{[]string{"soak", "--config", "x.yaml", "--shard", "0/4", "--concurrency", "2", "--start-at", "2030-01-01T00:00:00Z"}, "--concurrency"},
		{[]string{"check", "--from", t.TempDir(), t.TempDir()}, "--from"},
	} {
		code, out := runChild(t, c.args...)
		if code != ExitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, want %d naming %q:\n%s", c.args, code, ExitUsage, c.want, out)
		}
	}
}

package mysqlref

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	cfg, err := ParseURL("mysql://shop:p%40ss%2Fw0rd@db.internal:3307/orders?timeout=2s&tls=false")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "shop" || cfg.Passwd != "p@ss/w0rd" || cfg.Addr != "db.internal:3307" || cfg.DBName != "orders" || cfg.Timeout != 2*time.Second {
		t.Fatalf("got user %q addr %q db %q timeout %s", cfg.User, cfg.Addr, cfg.DBName, cfg.Timeout)
	}
	cfg, err = ParseURL("mariadb://root@127.0.0.1/")
	if err != nil || cfg.Addr != "127.0.0.1:3306" || cfg.DBName != "" || cfg.Timeout != DefaultConnectTimeout {
		t.Fatalf("server URL: %+v, %v", cfg, err)
	}
	for _, c := range []struct{ url, want string }{
		{"postgres://u:secretpw@h/db", "scheme must be mysql or mariadb"},
		{"mysql://u:secretpw@h/a/b", "one database name"},
		{"mysql://u:secretpw@h/db?timeout=soon", "refused by the driver"},
		{"mysql:///db", "needs a host"},
	} {
		_, err := ParseURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%s: %v, want %q and no password", c.url, err, c.want)
		}
	}
	if w := Where("mysql://u:secretpw@h:1/db"); w != "h:1/db" {
		t.Errorf("Where: %q", w)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "endpoints.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := LoadConfig(write("endpoints:\n  - {account: acct_A, path: /a, secret: whsec_x}\n  - {source: stripe-test, account: acct_A, path: /b, secret: whsec_y}\n"))
	if err != nil || len(cfg.Endpoints) != 2 || cfg.Endpoints[0].KeySource() != "stripe" || cfg.Endpoints[1].KeySource() != "stripe-test" {
		t.Fatalf("%+v, %v", cfg, err)
	}
	for _, c := range []struct{ file, want string }{
		{"endpoints:\n  - {account: acct_A, path: /a, secret: whsec_x, profile: stripe}\n", "profile"},
		{"endpoints:\n  - {account: acct_A, path: /a, secret: ''}\n", "endpoints[0].secret"},
		{"endpoints:\n  - {account: acct_A, path: /a, secret: whsec_x}\n  - {account: acct_B, path: /a, secret: whsec_x}\n", "endpoints[1].path"},
		{"endpoints: []\n", "at least one"},
	} {
		_, err := LoadConfig(write(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "whsec_x") {
			t.Errorf("%q: %v, want %q and no secret", c.file, err, c.want)
		}
	}
}

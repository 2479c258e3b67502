package mysqlstore

import (
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	cfg, err := ParseURL("mysql://shop:p%40ss:w%2Frd@db.example:3307/shop?parseTime=true&timeout=2s&sql_mode=%27ANSI_QUOTES%27")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "shop" || cfg.Passwd != "p@ss:w/rd" || cfg.Net != "tcp" || cfg.Addr != "db.example:3307" || cfg.DBName != "shop" {
		t.Errorf("cfg = %+v", cfg)
	}
	if !cfg.ParseTime || cfg.Timeout != 2*time.Second || cfg.Params["sql_mode"] != "'ANSI_QUOTES'" {
		t.Errorf("driver parameters: parseTime %v, timeout %s, params %v", cfg.ParseTime, cfg.Timeout, cfg.Params)
	}
	for raw, want := range map[string]string{
		"mariadb://root@127.0.0.1/test": "127.0.0.1:3306 test",
		"mysql://root@[::1]:3310/":      "[::1]:3310 ",
		"mysql://root@localhost":        "localhost:3306 ",
	} {
		cfg, err := ParseURL(raw)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", raw, err)
			continue
		}
		if got := cfg.Addr + " " + cfg.DBName; got != want {
			t.Errorf("ParseURL(%q): %q, want %q", raw, got, want)
		}
	}
}

func TestParseURLErrorsNeverShowIt(t *testing.T) {
	const pw = "s3cret-pw"
	for raw, want := range map[string]string{
		"postgres://u:" + pw + "@h/db":               `scheme "postgres": must be mysql:// or mariadb://`,
		"mysql://u:" + pw + "@/db":                   "must be mysql://user[:password]@host[:port]/database",
		"mysql://:" + pw + "@h/db":                   "names no user",
		"mysql://u:" + pw + "@h/db/more":             "the path must be one database name",
		"mysql://u:" + pw + "@h:port/db":             "not a URL",
		"mysql://u:" + pw + "@h/db?parseTime=maybe":  `driver parameter "parseTime": the driver refuses its value`,
		"mysql://u:" + pw + "@h/db?timeout=" + pw:    `driver parameter "timeout"`,
		"mysql://u:" + pw + "@h/db?%zz=1":            "its query is not name=value pairs",
		"mysql://u:" + pw + "@h/db?a%3Db=1":          `driver parameter "a=b": not a parameter or variable name`,
		"mysql:u:" + pw + "@h/db":                    "must be mysql://user[:password]@host[:port]/database",
		"mysql://u:" + pw + "@h/db?tls=" + pw + "x":  `driver parameter "tls"`,
		"mysql://u:" + pw + "@h/db?loc=" + pw + "%2": "its query is not name=value pairs",
	} {
		_, err := ParseURL(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseURL(%q) = %v, want %q", raw, err, want)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("ParseURL(%q) shows the password: %v", raw, err)
		}
	}
}

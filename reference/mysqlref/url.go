package mysqlref

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultConnectTimeout bounds one connection attempt when the URL sets no
// timeout parameter.
const DefaultConnectTimeout = 5 * time.Second

// ParseURL reads a database URL, mysql://user[:password]@host[:port]/database
// (or mariadb://), into a driver configuration. Query parameters are the
// driver's (timeout, tls, …; unknown ones are session variables). The database
// may be empty: a server URL. Errors name the rule, never the URL or its
// password.
func ParseURL(raw string) (*mysql.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("database URL: not a URL (want mysql://user[:password]@host[:port]/database)")
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return nil, fmt.Errorf("database URL: scheme must be mysql or mariadb, got %q", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("database URL: needs a host (mysql://user@host[:port]/database)")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if strings.Contains(db, "/") {
		return nil, errors.New("database URL: the path must be one database name")
	}
	// The parameters go through the driver's own DSN parser; user, password and
	// database are set afterwards, so none of them has to survive DSN quoting.
	cfg, err := mysql.ParseDSN("tcp(127.0.0.1:3306)/?" + u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("database URL: a query parameter is refused by the driver: %s", scrubPassword(err.Error(), u))
	}
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", net.JoinHostPort(u.Hostname(), port), db
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultConnectTimeout
	}
	return cfg, nil
}

// Where names a database URL's server and database for messages: host:port/db,
// never the user or the password.
func Where(raw string) string {
	cfg, err := ParseURL(raw)
	if err != nil {
		return "(unparsable database URL)"
	}
	return cfg.Addr + "/" + cfg.DBName
}

func scrubPassword(s string, u *url.URL) string {
	if u.User == nil {
		return s
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		s = strings.ReplaceAll(s, pw, "xxxxx")
	}
	return s
}

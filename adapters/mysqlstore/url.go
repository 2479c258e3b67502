package mysqlstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// DefaultPort is the port of a URL that names none.
const DefaultPort = "3306"

// ParseURL reads mysql://user[:password]@host[:port]/db[?params] (or
// mariadb://) into the driver's configuration. The query's parameters go to
// the driver as its DSN parameters (tls, charset, parseTime, a session
// variable such as sql_mode...). The database may be empty (a server URL, as
// Provision takes). Errors never quote the URL: it may hold a password.
func ParseURL(raw string) (*mysql.Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("mysqlstore: database URL: not a URL (not shown: it may hold a password)")
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return nil, fmt.Errorf("mysqlstore: database URL: scheme %q: must be mysql:// or mariadb://", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, errors.New("mysqlstore: database URL: must be mysql://user[:password]@host[:port]/database")
	}
	if u.User == nil || u.User.Username() == "" {
		return nil, errors.New("mysqlstore: database URL: names no user (mysql://user[:password]@host[:port]/database)")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if strings.Contains(db, "/") {
		return nil, errors.New("mysqlstore: database URL: the path must be one database name")
	}
	cfg, err := driverParams(u.RawQuery)
	if err != nil {
		return nil, err
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	port := u.Port()
	if port == "" {
		port = DefaultPort
	}
	cfg.Addr = net.JoinHostPort(u.Hostname(), port)
	cfg.DBName = db
	return cfg, nil
}

// driverParams hands the URL's query to the driver's own DSN parser, so that
// every parameter it documents means here what it means there. A parameter
// it refuses is named, its value not shown.
func driverParams(rawQuery string) (*mysql.Config, error) {
	if rawQuery == "" {
		return mysql.NewConfig(), nil
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, errors.New("mysqlstore: database URL: its query is not name=value pairs")
	}
	names := make([]string, 0, len(q))
	for name := range q {
		// A name the driver does not know is a session variable it sets.
		if !paramNameRE.MatchString(name) {
			return nil, fmt.Errorf("mysqlstore: database URL: driver parameter %q: not a parameter or variable name", name)
		}
		names = append(names, name)
	}
	cfg, err := mysql.ParseDSN("/?" + rawQuery)
	if err == nil {
		return cfg, nil
	}
	sort.Strings(names)
	for _, name := range names {
		one := url.Values{name: q[name]}
		if _, err := mysql.ParseDSN("/?" + one.Encode()); err != nil {
			return nil, fmt.Errorf("mysqlstore: database URL: driver parameter %q: the driver refuses its value (not shown)", name)
		}
	}
	return nil, errors.New("mysqlstore: database URL: the driver refuses its parameters together")
}

var paramNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// where names the server and database for messages: host:port/db.
func where(cfg *mysql.Config) string { return cfg.Addr + "/" + cfg.DBName }

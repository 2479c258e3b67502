package mysqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// ProvisionPrefix starts the name of every database Provision creates.
const ProvisionPrefix = "hookcert_"

// Provision creates a fresh database hookcert_<random> on the server
// serverURL names (its own database, if any, is only where the harness
// connects first) and returns its URL — serverURL with the new database in
// its path: it carries the password serverURL does — and a drop that removes
// it. drop first kills the sessions still connected to it (so an open
// transaction cannot make DROP DATABASE wait), as PostgreSQL's DROP DATABASE
// WITH (FORCE) does; it is safe to call more than once and returns the first
// call's result.
func Provision(ctx context.Context, serverURL string) (dbURL string, drop func(context.Context) error, err error) {
	cfg, err := ParseURL(serverURL)
	if err != nil {
		return "", nil, err
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, errors.New("mysqlstore: provision: server URL: not a URL (not shown: it may hold a password)")
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("mysqlstore: provision: %w", err)
	}
	name := ProvisionPrefix + hex.EncodeToString(b[:])
	cfg.DBName = ""
	admin, err := OpenConfig(ctx, cfg, sqlstore.Timeouts{})
	if err != nil {
		return "", nil, fmt.Errorf("mysqlstore: provision: %w", err)
	}
	err = admin.Exec(ctx, "CREATE DATABASE "+quoteIdent(name))
	admin.Close()
	if err != nil {
		return "", nil, fmt.Errorf("mysqlstore: provision: create database %s on %s: %w", name, cfg.Addr, err)
	}
	u.Path = "/" + name
	u.RawPath = ""
	var once sync.Once
	var dropErr error
	drop = func(ctx context.Context) error {
		once.Do(func() { dropErr = dropDatabase(ctx, cfg.Clone(), name) })
		return dropErr
	}
	return u.String(), drop, nil
}

// dropDatabase kills the sessions connected to name and drops it.
func dropDatabase(ctx context.Context, cfg *mysql.Config, name string) error {
	// Connected to no database, so that a database already gone is no error.
	cfg.DBName = ""
	d, err := OpenConfig(ctx, cfg, sqlstore.Timeouts{Statement: time.Minute})
	if err != nil {
		return fmt.Errorf("mysqlstore: drop database %s: %w", name, err)
	}
	defer d.Close()
	if _, err := d.terminateSessionsIn(ctx, name); err != nil {
		return fmt.Errorf("mysqlstore: drop database %s: %w", name, err)
	}
	if err := d.Exec(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)); err != nil {
		return fmt.Errorf("mysqlstore: drop database %s on %s: %w", name, cfg.Addr, err)
	}
	return nil
}

package pgprovision

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/x?sslmode=disable", "postgres://app:xxxxx@db:5432/x?sslmode=disable"},
		{"postgres://app@db/x", "postgres://app@db/x"},
		{"postgresql://db/x?user=app&password=s3cret", "postgresql://db/x?password=xxxxx&user=app"},
		{"postgres://app:p%40ss%2Fword@h1:5432,h2:5433/x", "postgres://app:xxxxx@h1:5432,h2:5433/x"},
		{"host=db user=app password=s3cret dbname=x", "host=db user=app password=xxxxx dbname=x"},
		{"host=db password='s3 cret' dbname=x", "host=db password=xxxxx dbname=x"},
		// Not parseable as a URL (bad port), still scrubbed by pattern.
		{"postgres://app:s3cret@db:notaport/x", "postgres://app:xxxxx@db:notaport/x"},
	}
	for _, c := range cases {
		got := Redact(c.in)
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "s3 cret") || strings.Contains(got, "p%40ss") {
			t.Errorf("Redact(%q) leaks the password: %q", c.in, got)
		}
	}
}

func TestValidateNamePrefix(t *testing.T) {
	for _, ok := range []string{"hookcert", "a", "run_2", "9lives", strings.Repeat("a", maxPrefixLen)} {
		if err := ValidateNamePrefix(ok); err != nil {
			t.Errorf("ValidateNamePrefix(%q) = %v, want nil", ok, err)
		}
	}
	bad := map[string]string{
		"":                                  "must not be empty",
		"Hookcert":                          "lowercase letters, digits and underscore",
		"hook-cert":                         "lowercase letters, digits and underscore",
		"hook cert":                         "lowercase letters, digits and underscore",
		`x";drop`:                           "lowercase letters, digits and underscore",
		strings.Repeat("a", maxPrefixLen+1): "at most 46 characters",
	}
	for in, rule := range bad {
		err := ValidateNamePrefix(in)
		if err == nil {
			t.Errorf("ValidateNamePrefix(%q) = nil, want error", in)
			continue
		}
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "NamePrefix") || !strings.Contains(err.Error(), rule) {
			t.Errorf("ValidateNamePrefix(%q) = %v, want ErrInvalidOptions naming NamePrefix and %q", in, err, rule)
		}
	}
	// Provision applies the same rule before doing anything.
	_, _, err := Provision(context.Background(), Options{URL: testServerURL(), NamePrefix: "Bad-Name"})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Provision with bad prefix: %v, want ErrInvalidOptions", err)
	}
}

func TestWithDatabase(t *testing.T) {
	got, err := withDatabase("postgres://u:pw@h:5/orig?sslmode=disable&dbname=other", "hookcert_ab")
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://u:pw@h:5/hookcert_ab?sslmode=disable"; got != want {
		t.Fatalf("withDatabase = %q, want %q", got, want)
	}
	if _, err := withDatabase("mysql://u@h/x", "d"); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "database URL") {
		t.Fatalf("withDatabase(mysql://) = %v, want an ErrInvalidOptions naming the database URL", err)
	}
}

func TestVersionOrder(t *testing.T) {
	dirs := []string{"/u/postgresql/9.6/bin", "/u/postgresql/16/bin", "/u/postgresql/10/bin", "/u/postgresql/15/bin"}
	newest := dirs[0]
	for _, d := range dirs[1:] {
		if versionLess(versionOf(newest), versionOf(d)) {
			newest = d
		}
	}
	if newest != "/u/postgresql/16/bin" {
		t.Fatalf("newest = %s, want 16", newest)
	}
}

func TestProvisionURL(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := Provision(ctx, Options{URL: testServerURL(), NamePrefix: "pgprov_test"})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if db.Method != MethodURL || !strings.HasPrefix(db.Name, "pgprov_test_") || len(db.Name) != len("pgprov_test_")+randomSuffixLen {
		t.Fatalf("unexpected database %+v", db)
	}
	if !databaseExists(t, db.Name) {
		t.Fatalf("database %s does not exist after Provision", db.Name)
	}
	conn := mustConnect(t, db.URL)
	var current string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&current); err != nil {
		t.Fatal(err)
	}
	if current != db.Name {
		t.Fatalf("URL points at %s, want %s", current, db.Name)
	}
	// The open session above must not block the drop (WITH (FORCE)).
	if err := cleanup(ctx); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if databaseExists(t, db.Name) {
		t.Fatalf("database %s still exists after cleanup", db.Name)
	}
	if err := cleanup(ctx); err != nil {
		t.Fatalf("second cleanup: %v", err)
	}
}

func TestProvisionURLKeep(t *testing.T) {
	ctx := context.Background()
	log, buf := captureLogger()
	db, cleanup, err := Provision(ctx, Options{URL: testServerURL(), KeepDatabase: true, NamePrefix: "pgprov_test", Logger: log})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() { _ = dropDatabase(context.Background(), testServerURL(), db.Name, 5*time.Second) })
	if err := cleanup(ctx); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if !databaseExists(t, db.Name) {
		t.Fatalf("database %s was dropped despite KeepDatabase", db.Name)
	}
	if !strings.Contains(buf.String(), "database "+db.Name+" kept at") {
		t.Fatalf("cleanup did not say where the kept database is; log:\n%s", buf.String())
	}
}

// closedPort returns a loopback port nobody listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestProvisionURLUnreachable(t *testing.T) {
	url := fmt.Sprintf("postgres://app:TopSecret42@127.0.0.1:%d/postgres?sslmode=disable", closedPort(t))
	log, buf := captureLogger()
	start := time.Now()
	_, cleanup, err := Provision(context.Background(), Options{URL: url, Logger: log})
	elapsed := time.Since(start)
	if err == nil {
		_ = cleanup(context.Background())
		t.Fatal("Provision succeeded against a closed port")
	}
	t.Logf("error after %s: %v", elapsed, err)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("error %v does not wrap ErrUnreachable", err)
	}
	if strings.Contains(err.Error(), "TopSecret42") || strings.Contains(buf.String(), "TopSecret42") {
		t.Errorf("password leaked: err=%v log=%s", err, buf.String())
	}
	if !strings.Contains(err.Error(), "app:xxxxx@127.0.0.1") || !strings.Contains(err.Error(), "explicit URL") {
		t.Errorf("error should name the redacted URL and the method: %v", err)
	}
	// A named URL is never silently replaced by another method.
	if strings.Contains(err.Error(), "docker") || strings.Contains(err.Error(), "local binaries") {
		t.Errorf("explicit URL fell through to other methods: %v", err)
	}
	if elapsed > 3*time.Second {
		t.Errorf("failing took %s, want fast", elapsed)
	}
}

func TestProvisionURLInvalid(t *testing.T) {
	_, _, err := Provision(context.Background(), Options{URL: "mysql://root:TopSecret42@db/x"})
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "database URL") || strings.Contains(err.Error(), "TopSecret42") {
		t.Fatalf("Provision(mysql URL) = %v, want a redacted ErrInvalidOptions naming the database URL", err)
	}
}

func TestDiscoveryReportsEveryMethod(t *testing.T) {
	_, _, err := Provision(context.Background(), Options{DisableDocker: true, DisableLocal: true})
	want := "no PostgreSQL: explicit URL: not given (--database-url or HOOKCERT_DATABASE_URL); docker: disabled; local binaries: disabled"
	if err == nil || err.Error() != want || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestDiscoveryNoBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := localBinGlob
	localBinGlob = t.TempDir() + "/*/bin"
	t.Cleanup(func() { localBinGlob = old })

	_, _, err := Provision(context.Background(), Options{DisableDocker: true})
	if err == nil {
		t.Fatal("Provision succeeded without binaries")
	}
	want := "local binaries: initdb not found on PATH or under " + localBinGlob
	if !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("err = %v, want suffix %q", err, want)
	}
}

func TestURLFromEnv(t *testing.T) {
	t.Setenv(EnvDatabaseURL, " postgres://x@h/db \n")
	if got := URLFromEnv(); got != "postgres://x@h/db" {
		t.Fatalf("URLFromEnv = %q", got)
	}
	t.Setenv(EnvDatabaseURL, "")
	if got := URLFromEnv(); got != "" {
		t.Fatalf("URLFromEnv = %q, want empty", got)
	}
}

func TestServerMajor(t *testing.T) {
	conn := mustConnect(t, testServerURL())
	var num int
	if err := conn.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		t.Fatal(err)
	}
	if got, want := serverMajor(conn), num/10000; got != want {
		t.Fatalf("serverMajor = %d, want %d (server_version_num %d)", got, want, num)
	}
}

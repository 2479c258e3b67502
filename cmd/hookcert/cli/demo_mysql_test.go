package cli

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/adapters/mysqlstore"
	"github.com/hookcert/hookcert/adapters/mysqlstore/mysqltest"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/reference/mysqlref"
	"github.com/hookcert/hookcert/reports"
)

// The MySQL demo's target parses as certify parses it: observe.mysql on the
// provisioned database, the MySQL reference started with its defects and its
// endpoints file (0600, holding exactly the target's secrets), a declared
// vocabulary, and the capabilities it was given.
func TestDemoMySQLTarget(t *testing.T) {
	dir := t.TempDir()
	const dbURL = "mysql://root:pw@127.0.0.1:3306/hookcert_0123456789abcdef"
	data, secrets, err := demoMySQLTarget("/bin/hookcert", dir, dbURL, []string{mysqlref.DefectCheckThenInsert}, demoMySQLCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := targetfile.Parse(data, targetfile.Vars{ListenAddr: "127.0.0.1:9"})
	if err != nil {
		t.Fatalf("the MySQL demo target does not parse: %v\n%s", err, data)
	}
	if tg.Store.Kind != targetfile.KindMySQL || tg.Store.URL.Reveal() != dbURL ||
		tg.Store.EventTable != mysqlref.EventTable || tg.Store.EffectTable != mysqlref.LedgerTable {
		t.Errorf("store: kind %s, tables %s %s", tg.Store.Kind, tg.Store.EventTable, tg.Store.EffectTable)
	}
	cmd := strings.Join(tg.Lifecycle.Command, " ")
	for _, want := range []string{"/bin/hookcert reference serve --store mysql --listen 127.0.0.1:9", "--defect check-then-insert", "--config " + filepath.Join(dir, "endpoints.yaml")} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	if strings.Contains(cmd, "pw") {
		t.Errorf("the database password is on the command line: %q", cmd)
	}
	if tg.Lifecycle.Env["HOOKCERT_DATABASE_URL"] != dbURL {
		t.Errorf("the receiver does not get its database in its environment")
	}
	v := tg.Events
	if v == nil || !v.Declared || v.Effect == nil || v.Effect.Type != mysqlref.TypeChargeSucceeded || v.Ordered == nil ||
		v.Ordered.Type != mysqlref.TypeSubscriptionUpdated || v.Ordered.Delete == nil || v.Ordered.Delete.Type != mysqlref.TypeSubscriptionDeleted ||
		v.Unhandled == nil || v.Lifecycle != nil {
		t.Errorf("events: %+v", v)
	}
	var caps []string
	for _, c := range tg.Capabilities {
		caps = append(caps, string(c))
	}
	if !slices.Equal(caps, demoMySQLCapabilities) || len(tg.Endpoints) != 2 {
		t.Errorf("capabilities %v, %d endpoints", caps, len(tg.Endpoints))
	}
	st, err := os.Stat(filepath.Join(dir, "endpoints.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("endpoints file: %v, mode %v", err, st.Mode().Perm())
	}
	cfg, err := mysqlref.LoadConfig(filepath.Join(dir, "endpoints.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range cfg.Endpoints {
		if e.Secret != secrets[i] || tg.Endpoints[i].Secret.Reveal() != e.Secret || tg.Endpoints[i].Path != e.Path {
			t.Errorf("endpoint %d: the receiver's and the target's differ", i)
		}
	}
}

// What --store mysql cannot do is refused before anything starts.
func TestDemoMySQLUsage(t *testing.T) {
	besideOthers(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--store", "oracle"}, `--store: must be postgres or mysql, got "oracle"`},
		{[]string{"demo", "--store", "mysql", "--mode", "inbox"}, "--mode: the MySQL reference has one design, sync"},
		{[]string{"demo", "--store", "mysql", "--defect", "slow-ack"}, `unknown defect "slow-ack"`},
		{[]string{"demo", "--store", "mysql", "--capabilities", "crash,failpoints"}, `"failpoints" is not one the MySQL reference offers`},
		{[]string{"demo", "--store", "mysql", "--database-url", "postgres://x@h/db"}, "--database-url: database URL: scheme must be mysql or mariadb"},
		{[]string{"reference", "serve", "--store", "mysql", "--mode", "inbox"}, "--mode: not with --store mysql"},
		{[]string{"reference", "defects", "--store", "redis"}, `--store: must be postgres or mysql, got "redis"`},
	} {
		code, out := runChild(t, c.args...)
		if code != ExitUsage || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", c.args, code, ExitUsage, c.want, out)
		}
	}
	// A server that does not answer: the target is unreachable (3), and the
	// password is not quoted.
	if code, out := runChild(t, "demo", "--store", "mysql", "--database-url", "mysql://root:sekret-pw@127.0.0.1:1/", "--report-dir", t.TempDir()); code != ExitUnreachable ||
		!strings.Contains(out, "no database for the MySQL reference on 127.0.0.1:1/") || strings.Contains(out, "sekret-pw") {
		t.Errorf("unreachable server: exit %d, want %d:\n%s", code, ExitUnreachable, out)
	}
	if code, out := runChild(t, "reference", "defects", "--store", "mysql"); code != 0 || !strings.Contains(out, "check-then-insert") || !strings.Contains(out, "ack-before-commit") {
		t.Errorf("reference defects --store mysql: exit %d\n%s", code, out)
	}
}

var demoDatabaseLine = regexp.MustCompile(`(?m)^database: mysql://[^ ]*/(hookcert_[0-9a-f]+) \(a fresh database`)

// demo --store mysql on real MariaDB: the clean MySQL reference passes every
// applicable guarantee, with DEDUP-1's race forced by the lock gate, and its
// database is dropped afterwards; check-then-insert fails DEDUP-1 with the
// codes of a duplicated event; ack-before-commit fails ACK-1: acknowledged
// events are gone after the kill.
func TestDemoMySQL(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: runs the MySQL demo")
	}
	server := mysqltest.Server(t)
	dir := t.TempDir()
	code, out := runChild(t, "demo", "--store", "mysql", "--database-url", server, "--report-dir", dir, "--seed", "7")
	if code != ExitOK {
		t.Fatalf("clean: exit %d, want 0:\n%s", code, out)
	}
	res, err := reports.ReadResults(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, g := range res.Guarantees {
		if g.Status == reports.StatusPassed {
			passed[g.ID] = true
		}
		if g.ID == "DEDUP-1" && (g.Race == nil || !g.Race.Forced) {
			t.Errorf("clean: DEDUP-1's race was not forced by the lock gate: %+v", g.Race)
		}
	}
	for _, id := range []string{"DEDUP-1", "DEDUP-3", "ATOMIC-1", "ATOMIC-3", "ACK-1", "ACK-3", "ORDER-1", "ORDER-2", "ORDER-4"} {
		if !passed[id] {
			t.Errorf("clean: %s did not pass (%v)", id, res.Summary)
		}
	}
	m := demoDatabaseLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo did not say which database it provisioned:\n%s", out)
	}
	if databaseExists(t, server, m[1]) {
		t.Errorf("database %s is still there after the demo", m[1])
	}

	code, out = runChild(t, "demo", "--store", "mysql", "--database-url", server, "--report-dir", t.TempDir(), "--seed", "7",
		"--defect", "check-then-insert", "--label-filter", "DEDUP-1")
	if code != ExitFailed || !regexp.MustCompile(`FAIL  DEDUP-1 .*\n.*codes: .*dedup\.effects, dedup\.rows`).MatchString(out) {
		t.Errorf("check-then-insert: exit %d, want 1 with DEDUP-1 failed on rows and effects:\n%s", code, out)
	}
	code, out = runChild(t, "demo", "--store", "mysql", "--database-url", server, "--report-dir", t.TempDir(), "--seed", "7",
		"--defect", "ack-before-commit", "--label-filter", "ACK-1")
	if code != ExitFailed || !regexp.MustCompile(`FAIL  ACK-1 .*\n.*codes: ack\.lost`).MatchString(out) {
		t.Errorf("ack-before-commit: exit %d, want 1 with ACK-1 failed, acknowledged events lost:\n%s", code, out)
	}
}

func databaseExists(t *testing.T, server, name string) bool {
	t.Helper()
	cfg, err := mysqlstore.ParseURL(server)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// The MySQL demo given its server with a password in $HOOKCERT_MYSQL_URL: the
// password is used (the user is named in the output) and appears in no line
// of the output and no report file, the receiver's log included.
func TestDemoMySQLLeaksNoPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the MySQL demo")
	}
	server := mysqltest.Server(t)
	cfg, err := mysqlstore.ParseURL(server)
	if err != nil {
		t.Fatal(err)
	}
	suffix := randomHex(t)
	user, password := "hc_planted_"+suffix, "planted-pw-"+suffix
	admin := func(stmt string) {
		t.Helper()
		c := cfg.Clone()
		c.DBName = ""
		db, err := sql.Open("mysql", c.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", strings.ReplaceAll(stmt, password, "<pw>"), err)
		}
	}
	for _, host := range []string{"%", "localhost"} {
		admin("CREATE USER '" + user + "'@'" + host + "' IDENTIFIED BY '" + password + "'")
		admin("GRANT ALL ON *.* TO '" + user + "'@'" + host + "'")
		t.Cleanup(func() { admin("DROP USER '" + user + "'@'" + host + "'") })
	}
	reportDir := filepath.Join(t.TempDir(), "report")
	c := exec.Command(hookcertBinary(t), "demo", "--store", "mysql", "--report-dir", reportDir, "--seed", "3",
		"--label-filter", "DEDUP-1 || ATOMIC-3 || ACK-3")
	c.Env = append(os.Environ(), "HOOKCERT_MYSQL_URL=mysql://"+user+":"+password+"@"+cfg.Addr+"/")
	b, err := c.CombinedOutput()
	out := strings.ReplaceAll(string(b), password, "<LEAKED>")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if !strings.Contains(out, "mysql://"+user+":xxxxx@") {
		t.Errorf("the output does not name %s: was the planted URL used?\n%s", user, out)
	}
	if strings.Contains(out, "<LEAKED>") {
		t.Errorf("the output carries the password:\n%s", out)
	}
	files := 0
	err = filepath.WalkDir(reportDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), password) {
			t.Errorf("%s carries the password", p)
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Errorf("report files: %d, %v", files, err)
	}
}

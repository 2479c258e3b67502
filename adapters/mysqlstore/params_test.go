package mysqlstore

import (
	"reflect"
	"strings"
	"testing"
)

func TestRewrite(t *testing.T) {
	for _, c := range []struct {
		in, out string
		order   []int
	}{
		{"SELECT COUNT(*) FROM e WHERE source = $1 AND event_id = $3", "SELECT COUNT(*) FROM e WHERE source = ? AND event_id = ?", []int{1, 3}},
		// In order of appearance, not of number; one parameter twice binds twice.
		{"SELECT 1 WHERE a = $2 OR b = $1 OR c = $2", "SELECT 1 WHERE a = ? OR b = ? OR c = ?", []int{2, 1, 2}},
		{"SELECT $3", "SELECT ?", []int{3}},
		{"SELECT x FROM t WHERE id=$10", "SELECT x FROM t WHERE id=?", []int{10}},
		{"SELECT ($1)+($2)", "SELECT (?)+(?)", []int{1, 2}},
		// Text, not parameters: strings, backquoted names, comments.
		{"SELECT '$1', \"$2\", `$3` FROM t WHERE a = $4", "SELECT '$1', \"$2\", `$3` FROM t WHERE a = ?", []int{4}},
		{"SELECT 'it''s $1' , 'a\\'$2' , $3", "SELECT 'it''s $1' , 'a\\'$2' , ?", []int{3}},
		{"SELECT `a``$1` FROM t WHERE b = $1", "SELECT `a``$1` FROM t WHERE b = ?", []int{1}},
		{"SELECT 1 -- $1\nWHERE a = $2", "SELECT 1 -- $1\nWHERE a = ?", []int{2}},
		{"SELECT 1 # $1\n, $2", "SELECT 1 # $1\n, ?", []int{2}},
		{"SELECT 1 /* $1 */ + $2", "SELECT 1 /* $1 */ + ?", []int{2}},
		{"SELECT 1 -- $1", "SELECT 1 -- $1", nil},
		// --$1 is minus minus a number to MySQL: not a comment.
		{"SELECT 5--$1", "SELECT 5--?", []int{1}},
		// /*! ... */ is code to the server.
		{"SELECT 1 /*!50700 + $1 */", "SELECT 1 /*!50700 + ? */", []int{1}},
		// A $ inside a name is part of it.
		{"SELECT col$1, $1col, a$2b FROM t$3 WHERE x = $4", "SELECT col$1, $1col, a$2b FROM t$3 WHERE x = ?", []int{4}},
		{"SELECT $ FROM t", "SELECT $ FROM t", nil},
		{"SELECT 'café $1', $1", "SELECT 'café $1', ?", []int{1}},
		{"SELECT é$1", "SELECT é$1", nil},
		{"", "", nil},
	} {
		out, order, err := Rewrite(c.in)
		if err != nil {
			t.Errorf("Rewrite(%q): %v", c.in, err)
			continue
		}
		if out != c.out || !reflect.DeepEqual(order, c.order) {
			t.Errorf("Rewrite(%q) = %q, %v; want %q, %v", c.in, out, order, c.out, c.order)
		}
	}
}

func TestRewriteRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 'abc":                 "unterminated ' quote at offset 7",
		"SELECT `abc":                 "unterminated ` quote",
		`SELECT "a\"`:                 `unterminated " quote`,
		"SELECT 1 /* x":               "unterminated /* comment",
		"SELECT * FROM t WHERE a = ?": "a ? placeholder at offset 26",
		"SELECT $0":                   `bad parameter "$0"`,
	} {
		if _, _, err := Rewrite(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Rewrite(%q) = %v, want %q", in, err, want)
		}
	}
	// A ? in text is text.
	if out, _, err := Rewrite("SELECT '?', `?` -- ?\n"); err != nil || out != "SELECT '?', `?` -- ?\n" {
		t.Errorf("question marks in text: %q, %v", out, err)
	}
}

func TestBindArgs(t *testing.T) {
	got, err := bindArgs([]int{3, 1, 3}, []any{"stripe", "acct", "evt_1"})
	if err != nil || !reflect.DeepEqual(got, []any{"evt_1", "stripe", "evt_1"}) {
		t.Errorf("bindArgs = %v, %v", got, err)
	}
	if _, err := bindArgs([]int{1, 4}, []any{"a", "b"}); err == nil || !strings.Contains(err.Error(), "uses $4, but 2 argument(s)") {
		t.Errorf("too few arguments: %v", err)
	}
	if n := maxParam([]int{2, 4, 1, 4}); n != 4 {
		t.Errorf("maxParam = %d", n)
	}
}

func TestSplitScript(t *testing.T) {
	script := `-- schema
CREATE TABLE a (id int); -- first
INSERT INTO a VALUES (1); INSERT INTO a VALUES (';');

/* a comment; with a semicolon */
CREATE TABLE "b" (
  x text DEFAULT 'a;b'
);
DELIMITER $$
CREATE TRIGGER t BEFORE INSERT ON a FOR EACH ROW
BEGIN
  SET NEW.id = NEW.id + 1;
END$$
delimiter ;
/*!40101 SET NAMES utf8 */;
# trailing comment; no statement
SELECT 1`
	stmts, err := splitScript(script)
	if err != nil {
		t.Fatal(err)
	}
	type s struct {
		first int
		text  string
	}
	var got []s
	for _, st := range stmts {
		got = append(got, s{st.first, strings.TrimSpace(st.text)})
	}
	want := []s{
		{2, "-- schema\nCREATE TABLE a (id int)"},
		{3, "-- first\nINSERT INTO a VALUES (1)"},
		{3, "INSERT INTO a VALUES (';')"},
		{6, "/* a comment; with a semicolon */\nCREATE TABLE \"b\" (\n  x text DEFAULT 'a;b'\n)"},
		{10, "CREATE TRIGGER t BEFORE INSERT ON a FOR EACH ROW\nBEGIN\n  SET NEW.id = NEW.id + 1;\nEND"},
		{15, "/*!40101 SET NAMES utf8 */"},
		{17, "# trailing comment; no statement\nSELECT 1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("split:\n%+v\nwant\n%+v", got, want)
	}
	// line is where the statement's text starts (the server counts its
	// lines from there).
	if stmts[1].line != 2 || stmts[4].line != 10 {
		t.Errorf("lines: %d, %d", stmts[1].line, stmts[4].line)
	}
	if _, err := splitScript("CREATE TABLE a (id int);\nINSERT INTO a VALUES ('x);\n"); err == nil || !strings.Contains(err.Error(), "unterminated ' quote starting on line 2") {
		t.Errorf("unterminated quote: %v", err)
	}
	if stmts, err := splitScript("  -- nothing\n;;\n"); err != nil || len(stmts) != 0 {
		t.Errorf("empty script: %v, %v", stmts, err)
	}
}

func TestSelectLike(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1": true, "  (select 1) union (select 2)": true, "WITH x AS (SELECT 1) SELECT * FROM x": true,
		"/* c */ SELECT 1": true, "-- c\nSELECT 1": true, "INSERT INTO t SELECT 1": false, "UPDATE t SET a = 1": false,
		"": false, "/* open": false,
	} {
		if got := selectLike(q); got != want {
			t.Errorf("selectLike(%q) = %v", q, got)
		}
	}
}

package scrub

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestPatterns(t *testing.T) {
	s := New("whsec_abcdefghijkl")
	cases := []struct{ in, want string }{
		{"key whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD done", "key whsec_[REDACTED] done"},
		{"sk whsk_AAAABBBB", "sk whsk_[REDACTED]"},
		{"stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc and sk_test_26PHem9AhJZvU623DfE1x4sd", "stripe sk_live_[REDACTED] and sk_test_[REDACTED]"},
		{"rk_live_abcdefgh12345678", "rk_live_[REDACTED]"},
		{"task_test_abcdefgh12345678 is a name", "task_test_abcdefgh12345678 is a name"},
		{"shopify shpss_0123456789abcdef0123456789abcdef", "shopify shpss_[REDACTED]"},
		{"token ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210", "token ghp_[REDACTED]"},
		{"postgres://app:pa55@db:5432/x?sslmode=disable", "postgres://app:[REDACTED]@db:5432/x?sslmode=disable"},
		{"url=postgres://app:pa55@db:5432/x, retrying", "url=postgres://app:[REDACTED]@db:5432/x, retrying"},
		{"postgresql://app:@db/x", "postgresql://app:[REDACTED]@db/x"},
		{"postgres://app@db/x", "postgres://app@db/x"}, // no password, nothing to hide
		{"postgres://app@db/x?password=pa55&sslmode=disable", "postgres://app@db/x?password=[REDACTED]&sslmode=disable"},
		{"postgres://app:p%zz@db/x", "postgres://app:[REDACTED]@db/x"}, // url.Parse rejects it
		{"postgres://app@db/%zz?password=pa55&x=1", "postgres://app@db/%zz?password=[REDACTED]&x=1"},
		{"host=db password=pa55 user=x", "host=db password=[REDACTED] user=x"},
		{"host=db password='p a s s' user=x", "host=db password=[REDACTED] user=x"},
		{"host=db PASSWORD=pa55 user=x", "host=db PASSWORD=[REDACTED] user=x"},
		{"PGPASSWORD=pa55 psql", "PGPASSWORD=[REDACTED] psql"},
		{`{"db_password": "pa\"55", "user": "x"}`, `{"db_password": "[REDACTED]", "user": "x"}`},
		{"bare abcdefghijkl from a lib without prefix", "bare [REDACTED] from a lib without prefix"},
		{"whsec_... is the format", "whsec_... is the format"},
		{"http://127.0.0.1:8080/healthz", "http://127.0.0.1:8080/healthz"},
		{"password: must not be empty", "password: must not be empty"},
	}
	for _, c := range cases {
		if got := s.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		// Scrubbing twice changes nothing more: output can be scrubbed again
		// (receiver.log is scrubbed by the process and by certify).
		if got := s.String(s.String(c.in)); got != c.want {
			t.Errorf("String twice (%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKnownSecretsInEveryEncoding(t *testing.T) {
	const pw = `pl&nted pw/"x"`
	s := New(pw, "", "short")
	for _, form := range []string{pw, "pl%26nted+pw%2F%22x%22", "pl&nted%20pw%2F%22x%22", `pl\u0026nted pw/\"x\"`} {
		in := "before " + form + " after"
		got := s.String(in)
		if got != "before "+Redacted+" after" {
			t.Errorf("form %q: String = %q", form, got)
		}
	}
	if got := s.String("a short one"); got != "a "+Redacted+" one" {
		t.Errorf("short secret: %q", got)
	}
	// A secret that contains another is removed whole, not in pieces.
	s = New("abc", "xxabcxx")
	if got := s.String("[xxabcxx]"); got != "["+Redacted+"]" {
		t.Errorf("nested secrets: %q", got)
	}
	var zero *Scrubber
	if got := zero.String("k whsec_AAAABBBB"); got != "k whsec_"+Redacted {
		t.Errorf("nil scrubber: %q", got)
	}
}

func TestError(t *testing.T) {
	s := New("hunter2")
	err := fmt.Errorf("connect postgres://u:hunter2@db/x (pw hunter2): %w", fs.ErrNotExist)
	got := s.Error(err)
	if strings.Contains(got.Error(), "hunter2") || !strings.Contains(got.Error(), Redacted) {
		t.Errorf("Error() = %q", got)
	}
	if !errors.Is(got, fs.ErrNotExist) {
		t.Error("the scrubbed error lost its chain")
	}
	plain := errors.New("nothing secret")
	if s.Error(plain) != plain {
		t.Error("an error with nothing to scrub should come back as is")
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

func TestPassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:p%40ss@db/x":       "p@ss",
		"postgres://u@db/x?password=q1":  "q1",
		"postgres://u@db/x":              "",
		"host=db password='a b\\'c' x=1": "a b'c",
		"host=db password=zz user=u":     "zz",
		"not a dsn":                      "",
	} {
		if got := Password(in); got != want {
			t.Errorf("Password(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	if got := URL("postgres://u:secret@127.0.0.1:5432/db?sslmode=disable"); got != "postgres://u:[REDACTED]@127.0.0.1:5432/db?sslmode=disable" {
		t.Errorf("URL = %q", got)
	}
}

func FuzzNoSecretSurvives(f *testing.F) {
	f.Add("postgres://u:SECRET@h/db", "SECRET")
	f.Add("x SECRET y", "SECRET")
	f.Fuzz(func(t *testing.T, text, secret string) {
		// A secret made of the marker's characters can be spelt anew by the
		// marker and its neighbours; that is not the secret surviving.
		if len(secret) < 3 || strings.ContainsAny(secret, "[]") || strings.Contains(Redacted, secret) {
			return
		}
		in := text + " " + secret + " " + text
		if got := New(secret).String(in); strings.Contains(got, secret) && !strings.Contains(text, secret) {
			t.Fatalf("secret %q survives in %q", secret, got)
		}
	})
}

package targetfile

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParseTarget feeds arbitrary content to the loader: it must not panic or
// hang, must give either a target or an error, the same error every time, and no
// error may quote the database password of the harness's URL.
func FuzzParseTarget(f *testing.F) {
	const pw = "s3cretpw"
	vars := Vars{DatabaseURL: "postgres://app:" + pw + "@127.0.0.1:5432/rx?sslmode=disable", ListenAddr: "127.0.0.1:18080"}
	doc, err := os.ReadFile("../../docs/target.md")
	if err != nil {
		f.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Complete example: the hookcert reference receiver")
	_, rest, _ := strings.Cut(section, "```yaml\n")
	example, _, _ := strings.Cut(rest, "```")
	inline := strings.ReplaceAll(full, "secret_env: HOOKCERT_TEST_SECRET_B", "secret: whsec_b")
	for _, s := range []string{
		inline,
		minimal,
		strings.ReplaceAll(example, "secret_env: STRIPE_SECRET_ACCT_B", "secret: whsec_b"),
		retentionBase + "  retention: {key_ttl: 744h, payload_ttl: 1d, purge: {command: [./purge, --as-of, \"{{.AsOf}}\"]}}\n",
		minimal + "---\ntarget: {}\n",
		"target:\n  name: [a]\n  endpoints: {x: 1}\n  limits: {max_body_bytes: lots}\n",
		"a: &a [*a]\n",
		"x: &e {profile: stripe}\ntarget:\n  endpoints: [{<<: *e, account: a}]\n",
		"target:\n  base_url: \"{{.DatabaseURL}}\"\n  endpoints: [{path: \"{{printf \\\"%q\\\" .DatabaseURL}}\"}]\n",
		"target: [\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tg, err := Parse(data, vars, WithProfiles([]string{"stripe", "github", "standard-webhooks"}))
		if (tg == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v: want exactly one of a target and an error", tg, err)
		}
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, pw) {
				t.Fatalf("error quotes the database password:\n%s", msg)
			}
			if _, err2 := Parse(data, vars, WithProfiles([]string{"stripe", "github", "standard-webhooks"})); err2 == nil || err2.Error() != msg {
				t.Fatalf("second Parse gave another error:\n%v\n---\n%s", err2, msg)
			}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					var fe *FieldError
					if !errors.As(e, &fe) && !strings.HasPrefix(e.Error(), "… and ") {
						t.Fatalf("a joined error is not a *FieldError: %v", e)
					}
				}
			}
		}
		if verr := Validate(data, nil); verr != nil && strings.Contains(verr.Error(), pw) {
			t.Fatalf("Validate error quotes the password: %v", verr)
		}
	})
}

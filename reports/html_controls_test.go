package reports

import (
	"bytes"
	"strings"
	"testing"
)

// Text a receiver sent (a response excerpt, a reason quoting it) reaches
// index.html with its control, bidi and zero-width characters shown, not obeyed.
func TestHTMLShowsControlCharacters(t *testing.T) {
	r := fixture()
	r.Guarantees[0].Reason = "answered \x1b[31mred\x1b[0m and \u202eevil\u200b text"
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, raw := range []string{"\x1b", "\u202e", "\u200b"} {
		if strings.Contains(page, raw) {
			t.Errorf("index.html carries %q as is", raw)
		}
	}
	if !strings.Contains(page, `\x1b[31mred`) || !strings.Contains(page, `\u202eevil`) {
		t.Errorf("index.html does not show the escapes")
	}
}

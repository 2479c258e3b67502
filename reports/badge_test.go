package reports

import (
	"strings"
	"testing"
)

func TestBadge(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Summary
		want string
	}{
		{"passed", Summary{Passed: 23, NotApplicable: 3, Total: 26},
			"![hookcert: 23 passed · 3 not applicable](https://img.shields.io/badge/hookcert-23%20passed%20%C2%B7%203%20not%20applicable-brightgreen)"},
		{"failed", Summary{Passed: 23, Failed: 1, Error: 1, Total: 25},
			"![hookcert: 1 failed · 1 error · 23 passed](https://img.shields.io/badge/hookcert-1%20failed%20%C2%B7%201%20error%20%C2%B7%2023%20passed-red)"},
		{"error", Summary{Passed: 10, Error: 1, Total: 11},
			"![hookcert: 1 error · 10 passed](https://img.shields.io/badge/hookcert-1%20error%20%C2%B7%2010%20passed-orange)"},
		{"nothing judged", Summary{NotApplicable: 26, Total: 26},
			"![hookcert: nothing judged · 26 not applicable](https://img.shields.io/badge/hookcert-nothing%20judged%20%C2%B7%2026%20not%20applicable-lightgrey)"},
		{"nothing selected", Summary{},
			"![hookcert: nothing judged](https://img.shields.io/badge/hookcert-nothing%20judged-lightgrey)"},
	} {
		if got := Badge(c.s); got != c.want {
			t.Errorf("%s: Badge = %s\nwant %s", c.name, got, c.want)
		}
	}
	// Dashes and underscores separate a shields.io path's fields: doubled, they stay text.
	if got := badgeText("a-b_c d/e"); got != "a--b__c%20d%2Fe" {
		t.Errorf("badgeText = %q", got)
	}
}

// The badge is summary.md's first line, made from the same counts as the headline.
func TestSummaryStartsWithBadge(t *testing.T) {
	r := &Results{Guarantees: []Guarantee{
		{ID: "DEDUP-1", Status: StatusPassed}, {ID: "DEDUP-2", Status: StatusFailed},
		{ID: "DEDUP-3", Status: StatusNotApplicable},
	}}
	var b strings.Builder
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	want := "![hookcert: 1 failed · 1 passed · 1 not applicable](https://img.shields.io/badge/hookcert-1%20failed%20%C2%B7%201%20passed%20%C2%B7%201%20not%20applicable-red)\n\n# hookcert certification: FAILED\n"
	if !strings.HasPrefix(b.String(), want) {
		t.Errorf("summary.md starts %q, want %q", strings.SplitN(b.String(), "\n\n#", 2)[0], want)
	}
}

// A run that stopped before judging says why in its badge, as in its headline.
func TestStoppedRunBadge(t *testing.T) {
	for outcome, want := range map[string]string{
		RunConfigError:     "![hookcert: configuration error](https://img.shields.io/badge/hookcert-configuration%20error-red)",
		RunUnreachable:     "![hookcert: target unreachable](https://img.shields.io/badge/hookcert-target%20unreachable-red)",
		RunNothingSelected: "![hookcert: nothing selected](https://img.shields.io/badge/hookcert-nothing%20selected-lightgrey)",
	} {
		var b strings.Builder
		if err := WriteMarkdown(&b, &Results{Outcome: outcome, Error: "why"}); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := strings.Cut(b.String(), "\n"); got != want {
			t.Errorf("%s: first line %s\nwant %s", outcome, got, want)
		}
	}
}

package cli

import (
	"crypto/rand"
	"fmt"
	"io"
	"strings"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator"
)

// sampleDeliveries renders one delivery of each profile the target file
// declares, as the simulator would send it to the first endpoint that names
// the profile (signed with that endpoint's secret), and prints it: a
// contract whose templates render and sign is proven here, before a run, and
// the receiver's author sees what the harness will send. Nothing is sent.
func sampleDeliveries(out io.Writer, tg *targetfile.Target) error {
	if len(tg.DeclaredProfiles) == 0 {
		return nil
	}
	eventType := "sample.event"
	if v := tg.Events; v != nil && v.Effect != nil {
		eventType = v.Effect.Type
	}
	for i, c := range tg.DeclaredProfiles {
		p, err := tg.LookupProfile(c.ID)
		if err != nil {
			return fmt.Errorf("profiles[%d] (%s): %w", i, c.ID, err)
		}
		url, account, secret, where := "", "acct_sample", "", "no endpoint names it: a stand-in URL and a fresh secret"
		for _, ep := range tg.EndpointsFor(c.ID) {
			url, account, secret = tg.URL(ep.Path), ep.Account, ep.Secret.Reveal()
			where = "as sent to " + ep.Path + ", signed with its secret"
			break
		}
		if url == "" {
			url = tg.BaseURL + "/" + c.ID
			if secret, err = targetfile.GenerateSecret(p, rand.Reader); err != nil {
				return fmt.Errorf("profiles[%d] (%s): a secret of its shape: %w", i, c.ID, err)
			}
		}
		sc := scrub.New(secret)
		r, err := simulator.NewRunner(simulator.Target{URL: url, Profile: p, Secrets: []string{secret}, Account: account}, simulator.Options{})
		if err != nil {
			return fmt.Errorf("profiles[%d] (%s): %w", i, c.ID, sc.Error(err))
		}
		plan := &simulator.Plan{Name: "sample", Seed: 1, Events: []simulator.EventSpec{{Name: "event", Type: eventType, Amount: 1000, Currency: "usd"}},
			Steps: []simulator.Step{{Event: "event", Copies: 1}}}
		reqs, err := r.Preview(plan)
		r.Close()
		if err != nil {
			return fmt.Errorf("profiles[%d] (%s): a sample delivery does not render: %w", i, c.ID, sc.Error(err))
		}
		var b strings.Builder
		printDryRun(&b, p.ID(), plan.Seed, reqs, secret)
		// The dry run's own heading says "nothing sent"; the sample says where.
		text := strings.SplitN(b.String(), "\n", 2)[1]
		fmt.Fprintf(out, "sample delivery of declared profile %s (%s; %s):%s", c.ID, p.Facts().Name, where, indent(text))
	}
	return nil
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

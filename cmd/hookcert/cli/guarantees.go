package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func newGuaranteesCmd() *cobra.Command {
	var format, profile, profileFile, config string
	cmd := &cobra.Command{
		Use:   "guarantees [--profile ID [--profile-file FILE | --config TARGET.yaml]]",
		Short: "Print the guarantee catalogue, or what one provider's profile makes applicable",
		Long: `Guarantees prints the catalogue: every guarantee with the capabilities it needs and
its promise.

--profile ID says instead which guarantees that provider's profile makes applicable,
and why the others are not: a guarantee about stale timestamps needs a profile that
signs one, one about identical payloads a profile that sends the event ID outside the
body. What else each guarantee needs of the target (a lifecycle to crash, a second
account, declared capabilities) is listed beside it: the profile cannot decide that.
The profile is a built-in one, or one a profile file (--profile-file) or a target file
(--config) declares in its top-level profiles: list.`,
		Example: `  hookcert guarantees --profile github
  hookcert guarantees --profile acme --profile-file acme.yaml --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if profile == "" {
				if profileFile != "" || config != "" {
					return usageErr("--profile-file and --config name where --profile is declared: give --profile ID")
				}
				return printCatalogue(out, format)
			}
			d, err := readDeclared(profileFile, config)
			if err != nil {
				return err
			}
			p, err := d.lookup(profile)
			if err != nil {
				return err
			}
			return printProfileVerdicts(out, format, d, p)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "text", "output format: text, markdown or json (markdown: the catalogue only)")
	fl.StringVar(&profile, "profile", "", "say which guarantees this provider profile makes applicable")
	fl.StringVar(&profileFile, "profile-file", "", "a YAML file whose top-level profiles: list declares --profile")
	fl.StringVar(&config, "config", "", "a target file whose profiles: list declares --profile")
	return cmd
}

func printCatalogue(out io.Writer, format string) error {
	switch format {
	case "text":
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNEEDS\tPROMISE")
		for _, g := range scenarios.Catalogue() {
			needs := strings.Join(g.Needs, ",")
			if needs == "" {
				needs = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", g.ID, needs, g.Promise)
		}
		return tw.Flush()
	case "markdown":
		_, err := out.Write(scenarios.CatalogueMarkdown())
		return err
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(scenarios.Catalogue())
	}
	return usageErr("--format must be one of text, markdown, json (got %q)", format)
}

// printProfileVerdicts prints what the profile p makes applicable.
func printProfileVerdicts(out io.Writer, format string, d declared, p profiles.Profile) error {
	others := profiles.All()
	for _, c := range d.contracts {
		if o, err := profiles.LookupIn(c.ID, d.contracts); err == nil {
			others = append(others, o)
		}
	}
	verdicts := profileVerdicts(p, others)
	applies := 0
	for _, v := range verdicts {
		if v.Applies {
			applies++
		}
	}
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Profile    string           `json:"profile"`
			Name       string           `json:"name"`
			Declared   bool             `json:"declared"`
			Applicable int              `json:"applicable"`
			Guarantees []profileVerdict `json:"guarantees"`
		}{p.ID(), p.Facts().Name, d.isDeclared(p.ID()), applies, verdicts})
	case "text":
	case "markdown":
		return usageErr("--format markdown prints the catalogue; with --profile give text or json")
	default:
		return usageErr("--format must be one of text, markdown, json (got %q)", format)
	}
	fmt.Fprintf(out, "profile %s: %d of %d guarantees applicable as far as the provider goes\n", d.describe(p), applies, len(verdicts))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROFILE\tWHY NOT / ALSO NEEDS OF THE TARGET")
	for _, v := range verdicts {
		verdict, why := "applies", "-"
		if !v.Applies {
			verdict, why = "no", v.Why
		} else if len(v.TargetNeeds) > 0 {
			var needs []string
			for _, n := range v.TargetNeeds {
				needs = append(needs, n.Capability)
			}
			why = "needs " + strings.Join(needs, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.ID, verdict, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "A guarantee the profile allows can still be not applicable to a target: what it needs of the target is")
	fmt.Fprintln(out, "named above (capabilities: docs/target.md), and the roles its events declare decide the rest.")
	return nil
}

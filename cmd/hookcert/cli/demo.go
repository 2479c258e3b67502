package cli

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/simulator/profiles"
)

func init() { register(newDemoCmd) }

// demoEndpoints are the reference receiver's endpoints in a demo: two accounts of one
// profile (account scope), several profiles (source scope), header-carried and
// body-carried event IDs, signed timestamps and not.
var demoEndpoints = []struct{ profile, account string }{
	{"stripe", "acct_A"}, {"stripe", "acct_B"}, {"standard-webhooks", "acct_A"},
	{"github", "acct_A"}, {"shopify", "acct_A"}, {"svix", "acct_A"},
}

func newDemoCmd() *cobra.Command {
	var f suiteFlags
	var defects, caps []string
	cmd := &cobra.Command{
		Use:   "demo [--defect NAME]...",
		Short: "Start the reference receiver on a throwaway PostgreSQL and certify it",
		Long: `Demo provisions PostgreSQL (--database-url, $HOOKCERT_DATABASE_URL, a container, or
local binaries), starts the reference receiver with fresh random secrets (and the
named defects, which break it on purpose), certifies it and writes the reports.
Exit status as for certify.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := reference.ValidateDefects(defects); err != nil {
				return usageErr("--defect: %v", err)
			}
			if err := f.validate(); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("locating the hookcert binary: %w", err)}
			}
			dir, err := os.MkdirTemp("", "hookcert-demo-")
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: err}
			}
			defer os.RemoveAll(dir)
			if err := validDemoCapabilities(caps); err != nil {
				return usageErr("--capabilities: %v", err)
			}
			targetYAML, secrets, err := demoTarget(exe, dir, defects, caps)
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: err}
			}
			out := cmd.OutOrStdout()
			if len(defects) > 0 {
				fmt.Fprintf(out, "reference receiver with defect(s): %s\n", strings.Join(defects, ", "))
			}
			opts := f.options(out, func(id string) string {
				c := fmt.Sprintf("hookcert repro %s --seed %d --demo", id, f.seed)
				for _, d := range defects {
					c += " --defect " + d
				}
				return c
			})
			opts.ConfigPath = "demo target"
			opts.ConfigData = targetYAML
			opts.Secrets = secrets
			return runCertify(cmd.Context(), out, opts)
		},
	}
	cmd.Flags().StringSliceVar(&caps, "capabilities", demoCapabilities,
		"capabilities the demo target declares (a subset, to see the verdicts a receiver without test hooks gets; \"none\" for none)")
	cmd.Flags().StringArrayVar(&defects, "defect", nil, "start the reference with this defect (repeatable; see `hookcert reference serve --help`)")
	f.add(cmd)
	return cmd
}

// demoTarget writes the reference receiver's endpoint file into dir and returns a
// target file that starts, observes and certifies it, and the secrets it holds.
func demoTarget(exe, dir string, defects, caps []string) ([]byte, []string, error) {
	var cfg reference.Config
	var secrets []string
	type tEndpoint struct {
		Profile string `yaml:"profile"`
		Account string `yaml:"account"`
		Path    string `yaml:"path"`
		Secret  string `yaml:"secret"`
		// The reference's retention for this endpoint (its profile's defaults, or
		// the short TTLs the no-ttl-floor defect lets through).
		KeyTTL     string `yaml:"key_ttl"`
		PayloadTTL string `yaml:"payload_ttl"`
	}
	var teps []tEndpoint
	shortTTLs := demoHasDefect(defects, reference.DefectNoTTLFloor)
	for _, e := range demoEndpoints {
		sec, err := profiles.GenerateSecret(e.profile, rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("secret for %s: %w", e.profile, err)
		}
		path := "/webhooks/" + e.profile + "/" + e.account
		rep := reference.Endpoint{Profile: e.profile, Account: e.account, Path: path, Secret: sec}
		if shortTTLs {
			// Below every profile's redelivery horizon; only the defect starts with it.
			rep.KeyTTL, rep.PayloadTTL = demoShortTTLs()
		}
		cfg.Endpoints = append(cfg.Endpoints, rep)
		r := rep.Retention()
		teps = append(teps, tEndpoint{e.profile, e.account, path, sec, r.KeyTTL.String(), r.PayloadTTL.String()})
		secrets = append(secrets, sec)
	}
	cfgBytes, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	cfgPath := filepath.Join(dir, "endpoints.yaml")
	if err := os.WriteFile(cfgPath, cfgBytes, 0o600); err != nil {
		return nil, nil, err
	}
	command := []string{exe, "reference", "serve", "--listen", "{{.ListenAddr}}", "--database-url", "{{.DatabaseURL}}",
		"--config", cfgPath, "--enable-failpoints"}
	for _, d := range defects {
		command = append(command, "--defect", d)
	}
	name := "hookcert reference receiver"
	if len(defects) > 0 {
		name += " (defects: " + strings.Join(defects, ", ") + ")"
	}
	doc := map[string]any{"target": map[string]any{
		"name":      name,
		"base_url":  "http://{{.ListenAddr}}",
		"endpoints": teps,
		"lifecycle": map[string]any{
			"command":    command,
			"ready":      map[string]any{"http": "/healthz", "timeout": "30s"},
			"stop_grace": "5s",
		},
		"observe": map[string]any{"postgres": map[string]any{
			"url":          "{{.DatabaseURL}}",
			"event_table":  "processed_webhook_events",
			"effect_table": "ledger_entries",
			"queries": map[string]string{
				"event_rows":      "SELECT count(*) FROM processed_webhook_events WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"effects":         "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND event_id=$3",
				"object_effects":  "SELECT count(*) FROM ledger_entries WHERE source=$1 AND account_id=$2 AND object_id=$4",
				"object":          "SELECT version, status FROM subscriptions WHERE source=$1 AND account_id=$2 AND object_id=$4",
				"payment":         "SELECT status FROM payments WHERE source=$1 AND account_id=$2 AND payment_id=$4",
				"payload_present": reference.PayloadPresentQuery, // key row or the orphan-payloads archive
			},
		}},
		"failpoints": map[string]any{"path": "/_hookcert/failpoints"},
		// The admin purge is mounted with --enable-failpoints; the running receiver
		// applies its own config and defects, as its periodic purger does.
		"retention":    map[string]any{"purge": map[string]any{"http": map[string]any{"method": "POST", "path": reference.AdminPurgePath}}},
		"capabilities": slices.DeleteFunc(slices.Clone(caps), func(c string) bool { return c == "none" }),
	}}
	if !slices.Contains(caps, "failpoints") {
		delete(doc["target"].(map[string]any), "failpoints")
	}
	out, err := yaml.Marshal(doc)
	return out, secrets, err
}

// demoShortTTLs are the key and payload TTLs the no-ttl-floor defect runs the demo
// with, configured in the reference and declared in the target alike.
func demoShortTTLs() (key, payload reference.Duration) {
	key, _ = reference.ParseDuration("1h") // constants: cannot fail
	payload, _ = reference.ParseDuration("30m")
	return key, payload
}

func demoHasDefect(defects []string, name string) bool {
	for _, d := range defects {
		if d == name {
			return true
		}
	}
	return false
}

// demoCapabilities is everything the reference receiver offers the harness.
var demoCapabilities = []string{"crash", "lock-gating", "connection-loss", "failpoints", "ordering", "state-machine", "domain-constraint", "retention"}

func validDemoCapabilities(caps []string) error {
	for _, c := range caps {
		if c != "none" && !slices.Contains(demoCapabilities, c) {
			return fmt.Errorf("%q is not one of %s, none", c, strings.Join(demoCapabilities, ", "))
		}
	}
	return nil
}

package hookcerttest

import (
	"crypto/rand"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/scrub"
	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// RunFile runs the conformance suite inside the caller's test against the
// target file at path, the file `hookcert certify --config path` certifies:
// checked by the same loader (its errors name the file's fields and lines,
// as the CLI's do), its relative paths resolved against its directory,
// assembled by the same composition root, and reported as Run reports (one
// subtest per guarantee).
//
// The test supplies what the CLI would: WithDatabaseURL fills
// {{.DatabaseURL}} (hookcerttest never provisions a database), WithEnv and
// WithGeneratedSecrets the environment the file reads (secret_env, {{env}}).
// It may replace parts of the file with Go: WithReceiver runs the receiver
// in the test process in place of target.lifecycle, crashable as a process
// is; WithPurge purges in place of target.retention.purge. Anything else the
// file declares runs as under the CLI: a lifecycle command is started,
// SIGKILLed and restarted as a process, a setup hook runs before the
// receiver starts, fixtures and purge commands run as commands.
func RunFile(t testing.TB, path string, opts ...Option) {
	t.Helper()
	o, err := newOptions(opts)
	if err != nil {
		t.Fatalf("hookcerttest: %v", err)
		return
	}
	secrets := append(o.setenv(t), scrub.Password(o.databaseURL))
	data, err := targetfile.ReadFile(path)
	if err != nil {
		t.Fatalf("hookcerttest: %v", err)
		return
	}
	dir, err := targetfile.BaseDir(path)
	if err != nil {
		t.Fatalf("hookcerttest: %s: %v", path, err)
		return
	}
	if o.genSecrets {
		secrets = append(secrets, generateSecrets(t, data)...)
	}
	gh := targetfile.GoHooks{Controller: o.receiver != nil, Purge: o.purge != nil}
	src := &source{path: path, data: data, dbURL: o.databaseURL, secrets: secrets, receiver: o.receiver, purge: o.purge != nil,
		opts: []targetfile.Option{targetfile.WithBaseDir(dir), targetfile.WithGoHooks(gh)}}
	src.hooks.Purge = o.purge
	suite(t, src, o)
}

// generateSecrets sets a fresh secret, in its profile's format, in each
// endpoint's secret_env that is unset or empty, and returns them. A file
// whose endpoints do not read as such is left to the loader, which names
// what is wrong.
func generateSecrets(t testing.TB, data []byte) []string {
	var doc struct {
		Target struct {
			Endpoints []struct {
				Profile   string `yaml:"profile"`
				SecretEnv string `yaml:"secret_env"`
			} `yaml:"endpoints"`
		} `yaml:"target"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	// The file's declared profiles make secrets of their own shape; a file
	// whose profiles do not load gets none here, and the loader names why.
	declared, _ := targetfile.ParseProfiles(data)
	var out []string
	for _, ep := range doc.Target.Endpoints {
		if ep.SecretEnv == "" || !envNameRE.MatchString(ep.SecretEnv) || os.Getenv(ep.SecretEnv) != "" {
			continue
		}
		p, err := profiles.LookupIn(ep.Profile, declared)
		if err != nil {
			continue // an unknown profile: the loader names it
		}
		sec, err := targetfile.GenerateSecret(p, rand.Reader)
		if err != nil {
			continue
		}
		t.Setenv(ep.SecretEnv, sec)
		out = append(out, sec)
	}
	return out
}

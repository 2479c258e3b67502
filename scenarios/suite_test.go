package scenarios

import (
	"context"
	"os"
	"testing"
)

// TestSuite certifies the receiver described by $HOOKCERT_CONFIG, so the suite runs
// under `go test` and the ginkgo CLI as well as inside hookcert (Ginkgo's flags —
// --ginkgo.label-filter, --ginkgo.seed — apply).
func TestSuite(t *testing.T) {
	cfg := os.Getenv("HOOKCERT_CONFIG")
	if cfg == "" {
		t.Skip("no target: set HOOKCERT_CONFIG=target.yaml to certify a receiver (scenarios/selftest runs the suite against the reference)")
	}
	res, err := Certify(context.Background(), CertifyOptions{
		ConfigPath: cfg, ReportDir: os.Getenv("HOOKCERT_REPORT_DIR"), TimeScale: DefaultTimeScale,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Guarantees {
		if g.Status == "failed" || g.Status == "error" {
			t.Errorf("%s %s: %s", g.ID, g.Status, g.Reason)
		}
	}
}

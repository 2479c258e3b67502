package scenarios

import (
	"context"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// TestSuite certifies the receiver described by $HOOKCERT_CONFIG, so the suite runs
// under `go test` and the ginkgo CLI as well as inside hookcert (Ginkgo's flags —
// --ginkgo.label-filter, --ginkgo.seed — apply).
func TestSuite(t *testing.T) {
	// Importing ginkgo here also tells the ginkgo CLI this package is a Ginkgo
	// suite, so it passes its flags through.
	gomega.RegisterFailHandler(ginkgo.Fail)
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

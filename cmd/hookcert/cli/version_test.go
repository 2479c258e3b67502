package cli

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// hookcert version names the module version, the commit the binary was built
// from and the Go version, read from the binary's build information.
func TestVersionNamesTheCommit(t *testing.T) {
	besideOthers(t)
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): no commit to compare with", err)
	}
	bin := filepath.Join(t.TempDir(), "hookcert")
	// -buildvcs=true: the build stamps the commit even where GOFLAGS turns it off.
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "github.com/hookcert/hookcert/cmd/hookcert").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	if !strings.HasPrefix(got, "hookcert v") {
		t.Errorf("hookcert version printed %q; want a module version (a pseudo-version in a checkout)", got)
	}
	for _, want := range []string{"commit " + strings.TrimSpace(string(head)), runtime.Version()} {
		if !strings.Contains(got, want) {
			t.Errorf("hookcert version printed %q; want it to contain %q", got, want)
		}
	}
}

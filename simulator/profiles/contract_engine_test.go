package profiles

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// fixtures reads testdata/engine/*.yaml: contracts of every shape the new
// providers need.
func fixtures(t testing.TB) map[string]Contract {
	t.Helper()
	files, err := filepath.Glob("testdata/engine/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string]Contract{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := ParseContracts(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cs {
			out[c.ID] = c
		}
	}
	return out
}

func fixtureIDs(m map[string]Contract) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// fixture builds one fixture's profile.
func fixture(t testing.TB, id string) Profile {
	t.Helper()
	fx := fixtures(t)
	c, ok := fx[id]
	if !ok {
		t.Fatalf("no fixture %s", id)
	}
	p, err := NewContractProfile(c, declaredResolver([]Contract{c}))
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return p
}

func TestFixturesValidate(t *testing.T) {
	fx := fixtures(t)
	for _, id := range fixtureIDs(fx) {
		if err := fx[id].Validate("testdata/engine/" + id + ".yaml"); err != nil {
			t.Errorf("%v", err)
		}
	}
}

// everyContract is every embedded contract and every fixture, with the
// profile the engine builds from it.
func everyContract(t *testing.T) map[string]*contractProfile {
	t.Helper()
	out := map[string]*contractProfile{}
	for _, c := range Contracts() {
		out["contracts/"+c.ID] = unwrapContract(contractOnly(t, c.ID))
	}
	for id := range fixtures(t) {
		out["testdata/"+id] = unwrapContract(fixture(t, id))
	}
	return out
}

package profiles

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
)

// The built-in contracts are data: contracts/*.yaml, one provider a file,
// embedded. A provider with a Go profile (the fast path the simulator's
// benchmark measures) has its contract here too: the registry attaches the
// contract's handshake and inputs to the Go profile, and the differential
// test holds the two to the same bytes. A provider without one is served
// by its contract alone, so adding a provider is one data file (with its
// test vectors).
//
//go:embed contracts/*.yaml
var contractFiles embed.FS

// builtin holds the embedded contracts, checked once.
var builtin = loadBuiltin()

type builtinContracts struct {
	list []Contract // sorted by ID
	byID map[string]Contract
}

func loadBuiltin() builtinContracts {
	b := builtinContracts{byID: map[string]Contract{}}
	entries, err := contractFiles.ReadDir("contracts")
	if err != nil {
		panic(fmt.Sprintf("profiles: embedded contracts: %v", err))
	}
	for _, e := range entries {
		name := path.Join("contracts", e.Name())
		data, err := contractFiles.ReadFile(name)
		if err != nil {
			panic(fmt.Sprintf("profiles: %s: %v", name, err))
		}
		cs, err := ParseContracts(data)
		if err != nil {
			panic(fmt.Sprintf("profiles: %s: %v", name, err))
		}
		for _, c := range cs {
			if _, dup := b.byID[c.ID]; dup {
				panic(fmt.Sprintf("profiles: %s: id %q is declared twice", name, c.ID))
			}
			b.byID[c.ID] = c
			b.list = append(b.list, c)
		}
	}
	sort.Slice(b.list, func(i, j int) bool { return b.list[i].ID < b.list[j].ID })
	return b
}

// Contracts returns the embedded contracts, sorted by ID (for docs). Their
// slices and maps are shared: do not modify them.
func Contracts() []Contract { return append([]Contract(nil), builtin.list...) }

// ContractOf returns the embedded contract with this ID.
func ContractOf(id string) (Contract, bool) {
	c, ok := builtin.byID[id]
	return c, ok
}

// builtinData compiles the embedded contract of a Go profile; a contract
// that does not compile is a bug caught by every test of the package.
func builtinData(id string) *contractProfile {
	c, ok := ContractOf(id)
	if !ok {
		panic(fmt.Sprintf("profiles: no embedded contract for the Go profile %q", id))
	}
	p, err := NewContractProfile(c, ContractOf)
	if err != nil {
		panic(fmt.Sprintf("profiles: contracts/%s.yaml: %v", id, err))
	}
	return unwrapContract(p)
}

// unwrapContract is the compiled contract behind a contract profile.
func unwrapContract(p Profile) *contractProfile {
	switch v := p.(type) {
	case *contractProfile:
		return v
	case cpH:
		return v.contractProfile
	case cpD:
		return v.contractProfile
	case cpK:
		return v.contractProfile
	case cpHD:
		return v.contractProfile
	case cpHK:
		return v.contractProfile
	case cpDK:
		return v.contractProfile
	case cpHDK:
		return v.contractProfile
	}
	return nil
}

// declaredResolver resolves same_as among the declared contracts first,
// then the built-in ones.
func declaredResolver(declared []Contract) func(string) (Contract, bool) {
	return func(id string) (Contract, bool) {
		for _, c := range declared {
			if c.ID == id {
				return c, true
			}
		}
		return ContractOf(id)
	}
}

// ValidateDeclared checks a target file's declared profiles: each one's
// rules (field names "<field>[i]"), their IDs unique, none shadowing a
// built-in profile.
func ValidateDeclared(declared []Contract, field string) error {
	var pr problems
	resolve := declaredResolver(declared)
	seen := map[string]int{}
	for i, c := range declared {
		f := fmt.Sprintf("%s[%d]", field, i)
		if j, dup := seen[c.ID]; dup && c.ID != "" {
			pr.add(f+".id", "%q is declared twice (also %s[%d])", c.ID, field, j)
			continue
		}
		seen[c.ID] = i
		if _, err := Lookup(c.ID); err == nil {
			pr.add(f+".id", "%q is a built-in profile: a declared profile needs an ID of its own (same_as: %s builds on it)", c.ID, c.ID)
			continue
		}
		if err := c.ValidateWith(f, resolve); err != nil {
			pr.list = append(pr.list, err)
		}
	}
	return pr.err()
}

// LookupIn returns the profile id among the declared contracts (a target
// file's profiles section) and the built-in profiles. The declared ones
// are validated (ValidateDeclared); they may not shadow a built-in.
func LookupIn(id string, declared []Contract) (Profile, error) {
	if err := ValidateDeclared(declared, "profiles"); err != nil {
		return nil, err
	}
	for _, c := range declared {
		if c.ID == id {
			return NewContractProfile(c, declaredResolver(declared))
		}
	}
	if p, ok := registry[id]; ok {
		return p, nil
	}
	ids := IDs()
	for _, c := range declared {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	return nil, fmt.Errorf("profile %q: unknown; valid profiles: %s", id, strings.Join(ids, ", "))
}

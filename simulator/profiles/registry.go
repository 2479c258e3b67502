package profiles

import (
	"fmt"
	"sort"
	"strings"
)

// registry holds one instance per profile; profiles are immutable values.
var registry = func() map[string]Profile {
	m, err := buildRegistry([]Profile{
		newStripe(), newGitHub(), newShopify(), newStandardWebhooks(), newSvix(),
		newSlack(), newPaddle(), newAdyen(), newAdyenLegacy(),
	}, builtin.list)
	if err != nil {
		panic(fmt.Sprintf("profiles: %v", err))
	}
	return m
}()

// buildRegistry serves the Go profiles (the fast path) and, for every
// contract without one, the contract engine.
func buildRegistry(goProfiles []Profile, contracts []Contract) (map[string]Profile, error) {
	m := map[string]Profile{}
	for _, p := range goProfiles {
		m[p.ID()] = p
	}
	for _, c := range contracts {
		if _, ok := m[c.ID]; ok {
			continue
		}
		p, err := NewContractProfile(c, ContractOf)
		if err != nil {
			return nil, fmt.Errorf("contracts/%s.yaml: %w", c.ID, err)
		}
		m[c.ID] = p
	}
	return m, nil
}

// IDs returns every profile ID, sorted.
func IDs() []string {
	ids := make([]string, 0, len(registry))
	for id := range registry {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// All returns every profile, sorted by ID.
func All() []Profile {
	ids := IDs()
	out := make([]Profile, len(ids))
	for i, id := range ids {
		out[i] = registry[id]
	}
	return out
}

// Lookup returns the profile with the given ID; the error lists the valid IDs.
func Lookup(id string) (Profile, error) {
	if p, ok := registry[id]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("profile %q: unknown; valid profiles: %s", id, strings.Join(IDs(), ", "))
}

package targetfile

import (
	"fmt"
	"strings"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// A provider that signs with a private key (Ed25519, ECDSA: Discord,
// SendGrid) gives its receivers the public key. The harness signs as the
// provider, with the private key an endpoint's secret or secret_env holds;
// the receiver is started with the public key through {{publicKey "NAME"}},
// where NAME is the endpoint's account, source or profile. Only the public
// key is rendered: the private key never leaves the endpoint.

// publicKey is {{publicKey "NAME"}}: the public key of the one endpoint (or
// the endpoints sharing one key) whose account, source or profile is name.
func (v *validator) publicKey(name string) (string, error) {
	t := v.target
	if t == nil || len(t.Endpoints) == 0 {
		return "", fmt.Errorf("{{publicKey %q}}: the target has no endpoints", name)
	}
	var named []int
	for i, e := range t.Endpoints {
		if e.Account == name || e.Source == name || e.Profile == name {
			named = append(named, i)
		}
	}
	if len(named) == 0 {
		return "", fmt.Errorf("{{publicKey %q}}: no endpoint's account, source or profile is %q", name, name)
	}
	keys := map[string][]int{}
	var order []string
	var shared []string
	for _, i := range named {
		e := t.Endpoints[i]
		p, err := t.LookupProfile(e.Profile)
		if err != nil {
			continue // the endpoint's profile is reported where it is named
		}
		pk, ok := p.(profiles.PublicKeyer)
		if !ok {
			shared = append(shared, fmt.Sprintf("target.endpoints[%d] (%s)", i, e.Profile))
			continue
		}
		secret := e.Secret.Reveal()
		if secret == "" {
			return "", fmt.Errorf("{{publicKey %q}}: target.endpoints[%d] has no secret to derive the public key from", name, i)
		}
		key, err := pk.PublicKey(secret)
		if err != nil {
			// The error may quote what it was given: the private key.
			msg := strings.ReplaceAll(err.Error(), secret, redacted)
			return "", fmt.Errorf("{{publicKey %q}}: target.endpoints[%d]'s secret is not a private key %s can sign with: %s", name, i, e.Profile, msg)
		}
		if _, seen := keys[key]; !seen {
			order = append(order, key)
		}
		keys[key] = append(keys[key], i)
	}
	switch len(order) {
	case 0:
		return "", fmt.Errorf("{{publicKey %q}}: %s sign%s with a shared secret, not a key pair: give the receiver the secret itself (the variable secret_env names)",
			name, strings.Join(shared, ", "), map[bool]string{true: "s", false: ""}[len(shared) == 1])
	case 1:
		return order[0], nil
	}
	var which []string
	for _, k := range order {
		for _, i := range keys[k] {
			which = append(which, fmt.Sprintf("target.endpoints[%d] (account %s)", i, t.Endpoints[i].Account))
		}
	}
	return "", fmt.Errorf("{{publicKey %q}}: names endpoints with different keys (%s): name one by its account", name, strings.Join(which, ", "))
}

package targetfile

import (
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/simulator/profiles"
)

// A target file may declare providers hookcert has no built-in profile for:
// a top-level `profiles:` list beside `target:`, each entry a delivery
// contract in the schema of the built-in ones (profiles.Contract), which the
// file's endpoints then name like a built-in (`profile: acme`). The section
// is checked as the rest of the file is: its shape by the shape checker
// (unknown fields, wrong types, with their lines), its rules by the
// contract's own validation, its errors renamed to `profiles[i].…` with the
// line of the field.

// declaredProfiles checks the file's profiles: section and compiles each
// contract into a profile. It runs before the endpoints, which may name one.
func (v *validator) declaredProfiles(t *Target, cs []profiles.Contract) {
	t.DeclaredProfiles = cs
	t.declared = compileDeclared(cs, v.failPath, v.brokenUnder)
}

// compileDeclared checks and compiles the declared contracts, reporting each
// broken rule through fail (a dotted path starting profiles[i], and the rule)
// and skipping those the shape check refused (broken).
func compileDeclared(cs []profiles.Contract, fail func(path, rule string), broken func(segs []any) bool) map[string]profiles.Profile {
	out := map[string]profiles.Profile{}
	if len(cs) == 0 {
		return out
	}
	byID := map[string]int{}
	for i, c := range cs {
		if c.ID == "" {
			continue // the contract's validation says it is required
		}
		if j, dup := byID[c.ID]; dup {
			fail(fmt.Sprintf("profiles[%d].id", i), fmt.Sprintf("profile %q is declared twice (also profiles[%d])", c.ID, j))
			continue
		}
		byID[c.ID] = i
		if _, err := profiles.Lookup(c.ID); err == nil {
			fail(fmt.Sprintf("profiles[%d].id", i), fmt.Sprintf("%q is a built-in profile: a declared profile needs an ID of its own "+
				"(an endpoint names the built-in one with profile: %s; a variant of it is declared with its own id and same_as: %s)", c.ID, c.ID, c.ID))
		}
	}
	// same_as may name a built-in contract or another declared one.
	resolve := func(id string) (profiles.Contract, bool) {
		if i, ok := byID[id]; ok {
			return cs[i], true
		}
		return profiles.ContractOf(id)
	}
	for i, c := range cs {
		prefix := fmt.Sprintf("profiles[%d]", i)
		if broken([]any{"profiles", i}) {
			continue
		}
		if j, ok := byID[c.ID]; c.ID != "" && (!ok || j != i) {
			continue // refused above
		}
		if _, builtin := profiles.Lookup(c.ID); c.ID != "" && builtin == nil {
			continue
		}
		if err := c.ValidateWith(prefix, resolve); err != nil {
			for _, e := range unjoinErrors(err) {
				path, rule := splitFieldError(e.Error(), prefix)
				fail(path, rule)
			}
			continue
		}
		p, err := profiles.NewContractProfile(c, resolve)
		if err != nil {
			// Validation passed: what is left is the compiled profile's own
			// check (a vector, say), named after the profile.
			fail(prefix, err.Error())
			continue
		}
		out[c.ID] = p
	}
	return out
}

// failPath is fail for a dotted path such as "profiles[0].signature.algorithm".
func (v *validator) failPath(path, rule string) {
	v.fail(parsePath(path), "%s", rule)
}

// pathSegRE splits "profiles[0].signature.algorithm" into its parts.
var pathSegRE = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// parsePath turns a dotted field path back into its segments (names and
// list indexes), for lineOf.
func parsePath(p string) []any {
	var segs []any
	for _, m := range pathSegRE.FindAllStringSubmatch(p, -1) {
		if m[2] != "" {
			n, _ := strconv.Atoi(m[2])
			segs = append(segs, n)
		} else {
			segs = append(segs, m[1])
		}
	}
	return segs
}

// splitFieldError splits "profiles[0].signature.algorithm: rule" into its
// path and rule; an error that names no field under prefix is prefix's.
func splitFieldError(msg, prefix string) (path, rule string) {
	if p, r, ok := strings.Cut(msg, ": "); ok && (p == prefix || strings.HasPrefix(p, prefix+".") || strings.HasPrefix(p, prefix+"[")) {
		return p, r
	}
	return prefix, msg
}

func unjoinErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoinErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// LookupProfile returns the profile an endpoint names: one the file declares,
// else a built-in one.
func (t *Target) LookupProfile(id string) (profiles.Profile, error) {
	if p, ok := t.declared[id]; ok {
		return p, nil
	}
	if p, err := profiles.Lookup(id); err == nil {
		return p, nil
	}
	return nil, fmt.Errorf("profile %q: unknown; valid profiles: %s", id, strings.Join(t.KnownProfiles(profiles.IDs()), ", "))
}

// KnownProfiles are builtin (the simulator's registry's IDs) and the IDs the
// file declares, sorted.
func (t *Target) KnownProfiles(builtin []string) []string {
	out := append([]string(nil), builtin...)
	for id := range t.declared {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// ParseProfiles reads the profiles a file declares: the top-level profiles:
// list of a target file, or of a file that holds nothing else (`hookcert
// fire --profile-file`); none (nil) when it has no such list. The rest of a
// target file is not checked. Errors are Parse's: each a *FieldError naming
// profiles[i].… and its line.
func ParseProfiles(data []byte) ([]profiles.Contract, error) {
	_, root, empty, err := decodeFirst(data)
	if err != nil || empty {
		return nil, err
	}
	top := &root
	if top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = top.Content[0]
	}
	if top.Kind != yaml.MappingNode {
		return nil, &FieldError{Path: "(top level)", Line: top.Line, Rule: "must be a mapping with a profiles: list"}
	}
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "profiles" {
			list = top.Content[i+1]
		}
	}
	if list == nil || isNull(list) {
		return nil, nil
	}
	sc := newShapeChecker()
	sc.check(list, reflect.TypeOf([]profiles.Contract(nil)), []any{"profiles"})
	var cs []profiles.Contract
	if err := list.Decode(&cs); err != nil && len(sc.errs) == 0 {
		return nil, explainYAML(err)
	}
	errs := sc.errs
	broken := func(segs []any) bool {
		v := &validator{bad: sc.bad}
		return v.brokenUnder(segs)
	}
	compileDeclared(cs, func(path, rule string) {
		errs = append(errs, &FieldError{Path: path, Rule: rule, Line: lineOf(&root, parsePath(path))})
	}, broken)
	if len(errs) > 0 {
		return nil, joinSorted(errs)
	}
	return cs, nil
}

// ReadProfiles reads and checks the profiles the file at path declares (see
// ParseProfiles); the error names the file.
func ReadProfiles(path string) ([]profiles.Contract, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	cs, err := ParseProfiles(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

// declaredIndex is the index of the declared contract with this ID.
func declaredIndex(cs []profiles.Contract, id string) (int, bool) {
	for i, c := range cs {
		if c.ID == id {
			return i, true
		}
	}
	return 0, false
}

// GenerateSecret returns a new signing secret in p's shape: a contract's
// secret section (or a fresh key pair, for a provider that signs with one),
// else the built-in profile's format. r is the randomness (crypto/rand).
func GenerateSecret(p profiles.Profile, r io.Reader) (string, error) {
	if m, ok := p.(profiles.SecretMaker); ok {
		return m.MakeSecret(r)
	}
	return profiles.GenerateSecret(p.ID(), r)
}

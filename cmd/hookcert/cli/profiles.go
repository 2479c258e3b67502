package cli

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hookcert/hookcert/adapters/targetfile"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// declared are the profiles a command may name beside the built-in ones:
// those a profile file (--profile-file) or a target file (--config) declares
// in its top-level profiles: list (docs/target.md, "Declaring a provider").
type declared struct {
	contracts []profiles.Contract
	// from names where they were read, for messages ("--profile-file acme.yaml").
	from string
}

// readDeclared reads the profiles --profile-file or --config declares; both
// empty declares none. A profile file must declare one; a target file may
// declare none.
func readDeclared(profileFile, config string) (declared, error) {
	switch {
	case profileFile != "" && config != "":
		return declared{}, usageErr("--profile-file and --config both declare profiles: give one")
	case profileFile != "":
		cs, err := targetfile.ReadProfiles(profileFile)
		if err != nil {
			return declared{}, usageErr("--profile-file: %v", err)
		}
		if len(cs) == 0 {
			return declared{}, usageErr("--profile-file: %s declares no profiles (a top-level profiles: list, docs/target.md \"Declaring a provider\")", profileFile)
		}
		return declared{contracts: cs, from: "--profile-file " + profileFile}, nil
	case config != "":
		cs, err := targetfile.ReadProfiles(config)
		if err != nil {
			return declared{}, usageErr("--config: %v", err)
		}
		return declared{contracts: cs, from: "--config " + config}, nil
	}
	return declared{}, nil
}

// lookup finds the profile id: a declared one, else a built-in one.
func (d declared) lookup(id string) (profiles.Profile, error) {
	p, err := profiles.LookupIn(id, d.contracts)
	if err != nil {
		// The error lists the valid profiles, the declared ones among them.
		return nil, usageErr("--profile: %v", err)
	}
	return p, nil
}

// isDeclared reports whether id is one of the declared profiles.
func (d declared) isDeclared(id string) bool {
	for _, c := range d.contracts {
		if c.ID == id {
			return true
		}
	}
	return false
}

// ids are the built-in profiles' IDs and the declared ones, sorted.
func (d declared) ids() []string {
	ids := profiles.IDs()
	for _, c := range d.contracts {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	return ids
}

// describe says what a profile is and where it comes from.
func (d declared) describe(p profiles.Profile) string {
	where := "built in"
	if d.isDeclared(p.ID()) {
		where = "declared in " + strings.TrimPrefix(strings.TrimPrefix(d.from, "--profile-file "), "--config ")
	}
	return fmt.Sprintf("%s (%s, %s)", p.ID(), p.Facts().Name, where)
}

// profileDeclaration is the entry of profile id in the profiles: list of the
// YAML file at path, as a list of one, indented under a profiles: key: its
// comments and its fields' order as the file has them.
func profileDeclaration(path, id string) ([]byte, error) {
	data, err := targetfile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: invalid YAML: %w", path, err)
	}
	top := &root
	if top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = top.Content[0]
	}
	for i := 0; top.Kind == yaml.MappingNode && i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "profiles" || top.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for _, entry := range top.Content[i+1].Content {
			for j := 0; entry.Kind == yaml.MappingNode && j+1 < len(entry.Content); j += 2 {
				if entry.Content[j].Value == "id" && entry.Content[j+1].Value == id {
					var b bytes.Buffer
					enc := yaml.NewEncoder(&b)
					enc.SetIndent(2)
					if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{entry}}); err != nil {
						return nil, err
					}
					return []byte(indent(b.String())), nil
				}
			}
		}
	}
	return nil, fmt.Errorf("%s declares no profile %q", path, id)
}

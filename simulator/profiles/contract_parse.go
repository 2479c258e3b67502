package profiles

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseContracts reads contracts from YAML: one contract (a mapping) or a
// list of them. It is strict: an unknown key is an error naming the key
// and where it is. It checks the shape only; Validate checks the rules.
func ParseContracts(data []byte) ([]Contract, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("contracts: %w", err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, errors.New("contracts: the document is empty")
	}
	doc := root.Content[0]
	list := doc
	single := doc.Kind == yaml.MappingNode
	if single {
		list = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{doc}}
	} else if doc.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("contracts: line %d: must be a contract (a mapping) or a list of contracts", doc.Line)
	}
	var errs []error
	for i, n := range list.Content {
		where := fmt.Sprintf("[%d]", i)
		if single {
			where = ""
		}
		checkKeys(n, reflect.TypeOf(Contract{}), where, &errs)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]Contract, 0, len(list.Content))
	for i, n := range list.Content {
		var c Contract
		if err := n.Decode(&c); err != nil {
			return nil, fmt.Errorf("contracts[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// checkKeys walks a YAML node against the Go type it decodes into and
// reports each unknown key with its path, line and the valid keys.
func checkKeys(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type error, reported by the decoder
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f.Type
			names = append(names, tag)
		}
		sort.Strings(names)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, fmt.Errorf("%s: unknown key (line %d); valid keys: %s", join(path, k.Value), k.Line, strings.Join(names, ", ")))
				continue
			}
			checkKeys(v, ft, join(path, k.Value), errs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hookcert/hookcert/reference"
	"github.com/hookcert/hookcert/scenarios"
	"github.com/hookcert/hookcert/simulator/profiles"
)

// Figures renders the regions of files under root. The names:
//
//	guarantee-count, family-count, code-count   the catalogue (scenarios)
//	profile-count, profile-list                 the simulator's provider profiles
//	defect-count                                the reference receiver's named defects
//	example-passed DIR, example-not-applicable DIR
//	example-passed-ids DIR                      an example receiver's clean verdicts
//	file PATH                                   a file of the repository, fenced
//	observer-kinds                              each guarantee by kind of observer (docs/target.md)
//	query-params                                each query's parameters, and who reads it (docs/target.md)
//	provider-table                              every profile's contract in one table (docs/providers.md)
func Figures(root string) Renderer {
	counts := map[string]func() int{
		"guarantee-count": func() int { return len(scenarios.Catalogue()) },
		"family-count":    func() int { return len(scenarios.Families) },
		"code-count":      func() int { return len(scenarios.DeviationCodes()) },
		"profile-count":   func() int { return len(profiles.IDs()) },
		"defect-count":    func() int { return len(reference.Defects()) },
	}
	return func(name, arg string) (string, error) {
		if n, ok := counts[name]; ok {
			return strconv.Itoa(n()), noArg(name, arg)
		}
		switch name {
		case "profile-list":
			ids := profiles.IDs()
			for i, id := range ids {
				ids[i] = "`" + id + "`"
			}
			return strings.Join(ids, ", "), noArg(name, arg)
		case "example-passed", "example-not-applicable", "example-passed-ids":
			passed, na, err := ExampleVerdicts(arg)
			switch {
			case err != nil:
				return "", err
			case name == "example-passed":
				return strconv.Itoa(len(passed)), nil
			case name == "example-not-applicable":
				return strconv.Itoa(len(na)), nil
			}
			return strings.Join(passed, ", "), nil
		case "file":
			return fenced(root, arg)
		case "observer-kinds":
			return scenarios.ObserverKindsMarkdown(), noArg(name, arg)
		case "query-params":
			return scenarios.QueryParamsMarkdown(), noArg(name, arg)
		case "provider-table":
			return ProvidersMarkdown(), noArg(name, arg)
		}
		return "", fmt.Errorf("unknown region (valid: %s, profile-list, example-passed DIR, example-not-applicable DIR, example-passed-ids DIR, file PATH, observer-kinds, query-params, provider-table)",
			strings.Join(sortedKeys(counts), ", "))
	}
}

func noArg(name, arg string) error {
	if arg != "" {
		return fmt.Errorf("%s takes no argument (got %q)", name, arg)
	}
	return nil
}

// fenced renders a repository file as a fenced block on lines of its own.
func fenced(root, path string) (string, error) {
	if path == "" || filepath.IsAbs(path) || strings.Contains(path, "..") {
		return "", fmt.Errorf("file needs a path inside the repository (got %q)", path)
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		return "", err
	}
	lang := map[string]string{".yaml": "yaml", ".yml": "yaml", ".go": "go", ".sh": "sh", ".sql": "sql"}[filepath.Ext(path)]
	text := strings.TrimRight(string(data), "\n")
	if strings.Contains(text, "```") {
		return "", fmt.Errorf("%s holds a ``` fence and cannot be shown in one", path)
	}
	return "\n```" + lang + "\n" + text + "\n```\n", nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package cmdobserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookcert/hookcert/adapters/observe"
)

// maxParam is the highest of hookcert's parameters: $1 source, $2 account,
// $3 event ID, $4 object ID.
const maxParam = 4

const paramRule = "hookcert's parameters are $1 (source), $2 (account), $3 (event ID) and $4 (object ID)"

// placeholder is one $n in a template, at s[start:end].
type placeholder struct {
	start, end, n int
}

// scan finds the $n of a template. A $ not followed by a digit is literal
// text (no shell reads these words); $0, $5 and $12 are mistakes.
func scan(s string) ([]placeholder, error) {
	var out []placeholder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) || s[i+1] < '0' || s[i+1] > '9' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i+1 : j])
		if err != nil || n < 1 || n > maxParam {
			return nil, fmt.Errorf("%s: %s", s[i:j], paramRule)
		}
		out = append(out, placeholder{start: i, end: j, n: n})
		i = j - 1
	}
	return out, nil
}

// params are the parameters used, in order of first use.
func params(phs []placeholder) []int {
	var out []int
	seen := map[int]bool{}
	for _, p := range phs {
		if !seen[p.n] {
			seen[p.n] = true
			out = append(out, p.n)
		}
	}
	return out
}

// substitute replaces each placeholder of s by esc(its value).
func substitute(s string, phs []placeholder, k observe.Key, esc func(string) string) string {
	if len(phs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, p := range phs {
		b.WriteString(s[last:p.start])
		b.WriteString(esc(param(k, p.n)))
		last = p.end
	}
	b.WriteString(s[last:])
	return b.String()
}

func param(k observe.Key, n int) string {
	switch n {
	case 1:
		return k.Source
	case 2:
		return k.Account
	case 3:
		return k.EventID
	default:
		return k.ObjectID
	}
}

// commandLine is a command query: its words, each with its placeholders.
type commandLine struct {
	words  []string
	phs    [][]placeholder
	params []int
}

func parseCommandLine(line string) (commandLine, error) {
	words := strings.Fields(line)
	if len(words) == 0 {
		return commandLine{}, errors.New("empty: a query is a command line (program and arguments, split on spaces)")
	}
	c := commandLine{words: words, phs: make([][]placeholder, len(words))}
	var all []placeholder
	for i, w := range words {
		phs, err := scan(w)
		if err != nil {
			return commandLine{}, err
		}
		if i == 0 && len(phs) > 0 {
			return commandLine{}, fmt.Errorf("the program %q holds a parameter: the first word names the program, the parameters go in its arguments", w)
		}
		c.phs[i] = phs
		all = append(all, phs...)
	}
	c.params = params(all)
	return c, nil
}

// args are the words with k's values substituted; a value is never split,
// whatever it holds.
func (c commandLine) args(k observe.Key) []string {
	out := make([]string, len(c.words))
	for i, w := range c.words {
		out[i] = substitute(w, c.phs[i], k, func(s string) string { return s })
	}
	return out
}

// request is the JSON object a command reads on stdin.
func request(name string, k observe.Key) []byte {
	b, _ := json.Marshal(struct {
		Query    string `json:"query"`
		Source   string `json:"source"`
		Account  string `json:"account"`
		EventID  string `json:"event_id"`
		ObjectID string `json:"object_id"`
	}{name, k.Source, k.Account, k.EventID, k.ObjectID})
	return append(b, '\n')
}

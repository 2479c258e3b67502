package soak

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Spec is a soak spec file (hookcert soak --spec FILE): how long, how hard
// and under what faults to soak, the phases, and the thresholds to hold the
// receiver to, so a CI job keeps them in one reviewed file. Set says which
// keys the file gave: a flag given on the command line overrides its key.
type Spec struct {
	Duration, Warmup, Drain, PauseFor, SettleBound time.Duration
	Concurrency                                    int
	Rate, DupRate, LostAckRate                     float64
	Nemesis                                        string
	Seed                                           int64
	Thresholds                                     []string
	Set                                            map[string]bool
}

// specKeys are the spec file's keys: each names the flag it stands for.
var specKeys = map[string]string{
	"duration": "--duration", "concurrency": "--concurrency", "rate": "--rate", "dup_rate": "--dup-rate",
	"lost_ack_rate": "--lost-ack-rate", "nemesis": "--nemesis", "pause_for": "--pause-for",
	"settle_bound": "--settle-bound", "seed": "--seed", "phases": "--warmup and --drain", "thresholds": "--threshold",
}

// SpecFlag is the flag a spec key stands for ("warmup" and "drain" are
// under phases).
func SpecFlag(key string) string {
	switch key {
	case "warmup", "drain":
		return "--" + key
	}
	return specKeys[key]
}

// ParseSpec reads a spec file strictly: an unknown or repeated key, a value
// of the wrong kind or a threshold that does not parse is an error naming the
// file, the line, the key and the rule.
func ParseSpec(name string, data []byte) (*Spec, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty spec file: give at least one of %s", name, strings.Join(sortedKeys(specKeys), ", "))
	}
	root := doc.Content[0]
	sp := &Spec{Set: map[string]bool{}}
	fail := func(n *yaml.Node, key, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s: %s", name, n.Line, key, fmt.Sprintf(format, args...))
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the spec is a mapping of keys (%s)", name, root.Line, strings.Join(sortedKeys(specKeys), ", "))
	}
	var errs []error
	err := mapping(root, func(k, v *yaml.Node) error {
		if _, ok := specKeys[k.Value]; !ok {
			return fmt.Errorf("%s:%d: unknown key %q (known: %s)", name, k.Line, k.Value, strings.Join(sortedKeys(specKeys), ", "))
		}
		sp.Set[k.Value] = true
		var err error
		switch k.Value {
		case "duration":
			sp.Duration, err = specDuration(v, k.Value, fail, true)
		case "pause_for":
			sp.PauseFor, err = specDuration(v, k.Value, fail, true)
		case "settle_bound":
			sp.SettleBound, err = specDuration(v, k.Value, fail, true)
		case "concurrency":
			var n int64
			n, err = specInt(v, k.Value, fail)
			sp.Concurrency = int(n)
		case "seed":
			sp.Seed, err = specInt(v, k.Value, fail)
		case "rate":
			sp.Rate, err = specFloat(v, k.Value, fail)
		case "dup_rate":
			sp.DupRate, err = specFloat(v, k.Value, fail)
		case "lost_ack_rate":
			sp.LostAckRate, err = specFloat(v, k.Value, fail)
		case "nemesis":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				return fail(v, k.Value, "must be a string such as kill=5s,pg-terminate=7s")
			}
			sp.Nemesis = v.Value
		case "phases":
			if v.Kind != yaml.MappingNode {
				return fail(v, k.Value, "must be a mapping with warmup and drain, e.g. {warmup: 5s, drain: 5s}")
			}
			err = mapping(v, func(pk, pv *yaml.Node) error {
				var err error
				switch pk.Value {
				case "warmup":
					sp.Warmup, err = specDuration(pv, "phases.warmup", fail, false)
				case "drain":
					sp.Drain, err = specDuration(pv, "phases.drain", fail, false)
				default:
					return fmt.Errorf("%s:%d: unknown key phases.%s (known: warmup, drain; the measure phase is duration)", name, pk.Line, pk.Value)
				}
				sp.Set[pk.Value] = true
				return err
			}, name, "phases.")
		case "thresholds":
			if v.Kind != yaml.SequenceNode {
				return fail(v, k.Value, "must be a list of thresholds, e.g. [\"p99<250ms\", \"rate>800/s\"]")
			}
			for i, t := range v.Content {
				at := fmt.Sprintf("thresholds[%d]", i)
				if t.Kind != yaml.ScalarNode || t.Tag != "!!str" {
					errs = append(errs, fail(t, at, "must be a string such as p99<250ms"))
					continue
				}
				if _, perr := ParseThreshold(t.Value); perr != nil {
					errs = append(errs, fail(t, at, "%q: %v", t.Value, perr))
					continue
				}
				sp.Thresholds = append(sp.Thresholds, t.Value)
			}
		}
		return err
	}, name, "")
	if err != nil {
		errs = append([]error{err}, errs...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return sp, nil
}

// mapping calls f for each key of a mapping, refusing repeated and non-string
// keys.
func mapping(n *yaml.Node, f func(k, v *yaml.Node) error, name, prefix string) error {
	seen := map[string]int{}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s:%d: keys are names", name, k.Line))
			continue
		}
		if l, ok := seen[k.Value]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: %s%s: repeated key (first at line %d)", name, k.Line, prefix, k.Value, l))
			continue
		}
		seen[k.Value] = k.Line
		if err := f(k, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type failer func(n *yaml.Node, key, format string, args ...any) error

func specDuration(v *yaml.Node, key string, fail failer, positive bool) (time.Duration, error) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		return 0, fail(v, key, "%q is not a duration: write it with its unit, e.g. 30s or 2m", v.Value)
	}
	d, err := time.ParseDuration(v.Value)
	switch {
	case err != nil:
		return 0, fail(v, key, "%q is not a duration: write it with its unit, e.g. 30s or 2m", v.Value)
	case positive && d <= 0:
		return 0, fail(v, key, "must be positive, got %s", v.Value)
	case d < 0:
		return 0, fail(v, key, "must not be negative, got %s", v.Value)
	}
	return d, nil
}

func specInt(v *yaml.Node, key string, fail failer) (int64, error) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		return 0, fail(v, key, "%q is not a whole number", v.Value)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 64)
	if err != nil {
		return 0, fail(v, key, "%q is not a whole number", v.Value)
	}
	return n, nil
}

func specFloat(v *yaml.Node, key string, fail failer) (float64, error) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		return 0, fail(v, key, "%q is not a number", v.Value)
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v.Value, "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fail(v, key, "%q is not a number", v.Value)
	}
	return f, nil
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

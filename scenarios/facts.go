package scenarios

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Facts are the values a scenario fixes that its checker needs (the newest
// version sent, the state an object must end in, the TTLs declared). Each
// family declares them as a struct whose fields carry a `fact:"name"` tag; the
// session writes the struct into the history's scenario record as a string
// map, and the checker reads it back into the same struct. A field is written
// when it is set: a pointer or slice that is not nil, a map entry, any other
// value that is not its zero. A map field's tag ends in ":" and each entry is
// written under that prefix and its key ("want_state:pi_1"). Values are
// written as fmt prints them (durations as "1h0m0s"), or with MarshalText.

// commonFacts are the facts the session's shared helpers record, which any
// checker may read.
type commonFacts struct {
	// Acceptance is "async" when the receiver applies events after its 2xx.
	Acceptance string `fact:"acceptance"`
	// Object names the lifecycle object in evidence ("payment_intent").
	Object string `fact:"object"`
	// Unforced says why a race the scenario sent was left to timing (no lock
	// gate), for the checker's report of the race.
	Unforced string `fact:"unforced"`
	// HandledTypes are the event types the receiver stores; EffectType the
	// effect role's, applied at most once per key. Histories without them are
	// of the built-in domain.
	HandledTypes words  `fact:"handled_types"`
	EffectType   string `fact:"effect_type"`
	// EffectTypes are every effect role's types, when there are several
	// (EffectType is the first's).
	EffectTypes words `fact:"effect_types"`
	// Expired are the keys the scenario purged on purpose.
	Expired lines `fact:"expired"`
	// KeyTTL and PayloadTTL are the retention declared for the endpoint a
	// retention check delivers to.
	KeyTTL     time.Duration `fact:"key_ttl"`
	PayloadTTL time.Duration `fact:"payload_ttl"`
	// Idempotency is the target's idempotency style when it is not the
	// ledger; OrderKeys are, per event key of an ordered update or deletion
	// the scenario sent, its object and ordering key ("sub_1 1700000003",
	// "sub_1 1700000005 delete"): what reconciling by object version needs.
	Idempotency string            `fact:"idempotency"`
	OrderKeys   map[string]string `fact:"order_key:"`
	// SetupState and SetupEvents are, per lifecycle object whose setup the
	// scenario verified, the state its setup needed it in and the IDs of the
	// setup events sent for it (none for a fixture).
	// EffectsBlind is why the effects reads cannot show an event applied
	// twice (a state effect without a witness); "" when they can.
	EffectsBlind string `fact:"effects_blind"`
	// ObjectEffectsBlind is the same of the lifecycle's effects reads.
	ObjectEffectsBlind string            `fact:"object_effects_blind"`
	SetupState         map[string]string `fact:"setup_state:"`
	SetupEvents        map[string]words  `fact:"setup_events:"`
	// OrderedFixture is set when a fixture makes each ordered object before
	// its first update: a store check's object may then exist without it.
	OrderedFixture bool `fact:"ordered_fixture"`
}

// words is a list written space-separated.
type words []string

func (w words) MarshalText() ([]byte, error) { return []byte(strings.Join(w, " ")), nil }
func (w *words) UnmarshalText(b []byte) error {
	*w = append(words{}, strings.Fields(string(b))...)
	return nil
}

// lines is a list written one item per line.
type lines []string

func (l lines) MarshalText() ([]byte, error) { return []byte(strings.Join(l, "\n")), nil }
func (l *lines) UnmarshalText(b []byte) error {
	*l = lines{}
	for _, s := range strings.Split(string(b), "\n") {
		if s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// durations is a list of durations written comma-separated.
type durations []time.Duration

func (d durations) MarshalText() ([]byte, error) {
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = x.String()
	}
	return []byte(strings.Join(s, ",")), nil
}

func (d *durations) UnmarshalText(b []byte) error {
	*d = durations{}
	for _, s := range strings.Split(string(b), ",") {
		x, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = append(*d, x)
	}
	return nil
}

// encodeFacts writes the tagged fields of the struct *v into dst.
func encodeFacts(dst map[string]string, v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		name, ok := rv.Type().Field(i).Tag.Lookup("fact")
		if !ok {
			continue
		}
		f := rv.Field(i)
		switch {
		case f.Kind() == reflect.Map:
			it := f.MapRange()
			for it.Next() {
				dst[name+it.Key().String()] = formatFact(it.Value())
			}
		case f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice:
			if !f.IsNil() {
				dst[name] = formatFact(f)
			}
		case !f.IsZero():
			dst[name] = formatFact(f)
		}
	}
}

func formatFact(f reflect.Value) string {
	if m, ok := f.Interface().(encoding.TextMarshaler); ok {
		b, _ := m.MarshalText()
		return string(b)
	}
	if f.Kind() == reflect.Pointer {
		f = f.Elem()
	}
	return fmt.Sprint(f.Interface())
}

// decodeFacts reads the tagged fields of the struct *v from src; names it does
// not know are left alone (the session's own, or another family's).
func decodeFacts(src map[string]string, v any) error {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		name, ok := rv.Type().Field(i).Tag.Lookup("fact")
		if !ok {
			continue
		}
		f := rv.Field(i)
		if f.Kind() == reflect.Map {
			for k, s := range src {
				key, ok := strings.CutPrefix(k, name)
				if !ok {
					continue
				}
				if f.IsNil() {
					f.Set(reflect.MakeMap(f.Type()))
				}
				val := reflect.New(f.Type().Elem()).Elem()
				if err := parseFact(val, s); err != nil {
					return fmt.Errorf("fact %s: %w", k, err)
				}
				f.SetMapIndex(reflect.ValueOf(key), val)
			}
			continue
		}
		s, ok := src[name]
		if !ok {
			continue
		}
		if err := parseFact(f, s); err != nil {
			return fmt.Errorf("fact %s: %w", name, err)
		}
	}
	return nil
}

func parseFact(f reflect.Value, s string) error {
	if f.Kind() == reflect.Pointer {
		p := reflect.New(f.Type().Elem())
		if err := parseFact(p.Elem(), s); err != nil {
			return err
		}
		f.Set(p)
		return nil
	}
	if u, ok := f.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return u.UnmarshalText([]byte(s))
	}
	if f.Type() == reflect.TypeOf(time.Duration(0)) {
		d, err := time.ParseDuration(s)
		f.SetInt(int64(d))
		return err
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		f.SetBool(b)
		return err
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(s, 10, 64)
		f.SetInt(n)
		return err
	default:
		return fmt.Errorf("unsupported fact type %s", f.Type())
	}
	return nil
}

package cmdobserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/hookcert/hookcert/adapters/sqlstore"
)

// colType is what a column of a query's answer must hold.
type colType int

const (
	colInt colType = iota
	colText
	colBool
)

func (t colType) String() string {
	switch t {
	case colInt:
		return "an integer"
	case colText:
		return "a string"
	default:
		return "true or false"
	}
}

type column struct {
	name string
	typ  colType
}

// shape is what one query answers: its columns (an object's keys), how many of
// them a row may leave off at the end, and whether more than one row is wrong
// here. The observer judges the row count of the other queries itself (object,
// payment, payload_present, quiescent, inbox/outbox state), as it does for SQL.
type shape struct {
	cols     []column
	optional int
	oneRow   bool
}

var (
	countShape = shape{cols: []column{{"count", colInt}}, oneRow: true}
	// shapes follows adapters/observe's columns, with key_ttl's ttl_ms.
	shapes = map[string]shape{
		"event_rows":      countShape,
		"effects":         countShape,
		"object_effects":  countShape,
		"object":          {cols: []column{{"version", colInt}, {"status", colText}}, optional: 1}, // an ordered object's state is its ordering key alone
		"payment":         {cols: []column{{"status", colText}}},
		"payload_present": {cols: []column{{"present", colBool}}},
		"key_ttl":         {cols: []column{{"ttl_ms", colInt}}, oneRow: true},
		"quiescent":       {cols: []column{{"quiescent", colBool}}},
		"inbox_state":     {cols: []column{{"state", colText}, {"attempts", colInt}}},
		"outbox_state":    {cols: []column{{"state", colText}, {"attempts", colInt}}},
	}
)

func (s shape) names() string {
	n := make([]string, len(s.cols))
	for i, c := range s.cols {
		n[i] = c.name
	}
	return strings.Join(n, ", ")
}

// answerRule is the protocol, for messages.
const answerRule = "a query answers one JSON value: null (no row), a scalar, an array (one row), an array of arrays (rows) or an object keyed by column names"

// decodeRows reads a query's answer as rows. The error says what is wrong
// with the answer; the caller names the field and classes it.
func decodeRows(name string, body []byte) (sqlstore.Rows, error) {
	v, err := decodeOne(body)
	if err != nil {
		return sqlstore.Rows{}, err
	}
	sh, known := shapes[name]
	var rows [][]any
	switch v := v.(type) {
	case nil:
	case []any:
		if rows, err = arrayRows(v); err != nil {
			return sqlstore.Rows{}, err
		}
	case map[string]any:
		if !known {
			return sqlstore.Rows{}, fmt.Errorf("an object, but hookcert knows no column names for query %s (answer a value or an array)", name)
		}
		row, err := objectRow(sh, v)
		if err != nil {
			return sqlstore.Rows{}, err
		}
		rows = [][]any{row}
	default:
		rows = [][]any{{v}}
	}
	if !known {
		for _, r := range rows {
			for i := range r {
				r[i] = plain(r[i])
			}
		}
		return sqlstore.Rows{Values: rows}, nil
	}
	return typedRows(name, sh, rows)
}

// decodeOne parses exactly one JSON value, keeping numbers exact.
func decodeOne(body []byte) (any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("empty answer (" + answerRule + ")")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %v (%s); it began %s", err, answerRule, excerpt(body, 80))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value (%s); it began %s", answerRule, excerpt(body, 80))
	}
	return v, nil
}

func arrayRows(a []any) ([][]any, error) {
	if len(a) == 0 {
		return nil, nil
	}
	_, nested := a[0].([]any)
	if !nested {
		for i, e := range a {
			if err := scalar(e); err != nil {
				return nil, fmt.Errorf("element %d of the array is %s (%s)", i, err, answerRule)
			}
		}
		return [][]any{a}, nil
	}
	rows := make([][]any, len(a))
	for i, e := range a {
		r, ok := e.([]any)
		if !ok {
			return nil, fmt.Errorf("element %d of an array of rows is %s, not an array (%s)", i, describe(e), answerRule)
		}
		for j, x := range r {
			if err := scalar(x); err != nil {
				return nil, fmt.Errorf("row %d, value %d is %s (a row holds scalars)", i, j, err)
			}
		}
		rows[i] = r
	}
	return rows, nil
}

func scalar(v any) error {
	switch v.(type) {
	case []any, map[string]any:
		return errors.New(describe(v))
	}
	return nil
}

func objectRow(sh shape, m map[string]any) ([]any, error) {
	row := make([]any, 0, len(sh.cols))
	for i, c := range sh.cols {
		v, ok := m[c.name]
		if !ok {
			if i >= len(sh.cols)-sh.optional {
				break
			}
			return nil, fmt.Errorf("an object without %q (an object answer holds %s)", c.name, sh.names())
		}
		if err := scalar(v); err != nil {
			return nil, fmt.Errorf("%q is %s (a column holds a scalar)", c.name, err)
		}
		row = append(row, v)
	}
	return row, nil
}

// typedRows checks every row against the query's columns and converts its
// values to the types observe.Reader promises.
func typedRows(name string, sh shape, rows [][]any) (sqlstore.Rows, error) {
	if sh.oneRow && len(rows) > 1 {
		return sqlstore.Rows{}, fmt.Errorf("%d rows (query %s answers at most one)", len(rows), name)
	}
	width := len(sh.cols)
	if len(rows) > 0 {
		width = len(rows[0])
	}
	for i, r := range rows {
		if len(r) < len(sh.cols)-sh.optional || len(r) > len(sh.cols) || len(r) != width {
			return sqlstore.Rows{}, fmt.Errorf("a row of %d value(s) (query %s answers %s)", len(r), name, sh.names())
		}
		for j, v := range r {
			c := sh.cols[j]
			x, ok := convert(c.typ, v)
			if !ok {
				where := ""
				if len(rows) > 1 {
					where = fmt.Sprintf(" in row %d", i)
				}
				return sqlstore.Rows{}, fmt.Errorf("%s where %s is due%s (want %s or null)", describe(v), c.name, where, c.typ)
			}
			r[j] = x
		}
	}
	cols := make([]string, width)
	for j := range cols {
		cols[j] = sh.cols[j].name
	}
	return sqlstore.Rows{Columns: cols, Values: rows}, nil
}

// convert gives v as column type t wants it: int64, string or bool; nil stays
// nil (NULL). An integral number written with a fraction or exponent (3.0,
// 1e3) is an integer; anything else of another type is refused, not coerced.
func convert(t colType, v any) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch t {
	case colInt:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, true
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return nil, false
		}
		return int64(f), true
	case colText:
		s, ok := v.(string)
		return s, ok
	default:
		b, ok := v.(bool)
		return b, ok
	}
}

// plain converts a JSON number of a query hookcert has no columns for.
func plain(v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i
	}
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}

// describe names a JSON value's type and shows it, shortened.
func describe(v any) string {
	kind := "a number"
	switch v.(type) {
	case string:
		kind = "a string"
	case bool:
		kind = "a boolean"
	case nil:
		return "null"
	case []any:
		kind = "an array"
	case map[string]any:
		kind = "an object"
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return kind + " " + s
}

// excerpt is the start of b, shortened to about n bytes.
func excerpt(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strconv.Quote(s)
}

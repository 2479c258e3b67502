package targetfile

import (
	"reflect"

	"go.yaml.in/yaml/v3"
)

// rawRoles is a role of target.events written once (a mapping, the form every
// file had) or several times (a list of mappings): events.lifecycle may be one
// object or several.
type rawRoles[T any] struct {
	Items []*T
	// List is true when the file wrote a list: errors then name the item
	// (target.events.lifecycle[1].state).
	List bool
}

// UnmarshalYAML takes a mapping or a list of mappings.
func (r *rawRoles[T]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		r.List = true
		return n.Decode(&r.Items)
	}
	one := new(T)
	if err := n.Decode(one); err != nil {
		return err
	}
	r.Items = []*T{one}
	return nil
}

// Len is how many roles the file declares.
func (r *rawRoles[T]) Len() int {
	if r == nil {
		return 0
	}
	return len(r.Items)
}

// first is the first role declared; nil when none is.
func (r *rawRoles[T]) first() *T {
	if r.Len() == 0 {
		return nil
	}
	return r.Items[0]
}

// firstField names a field of the first role (base.field, or base[0].field
// for a list).
func (r *rawRoles[T]) firstField(base, field string) string {
	if r.List {
		return base + "[0]." + field
	}
	return base + "." + field
}

// path is the field path of item i.
func (r *rawRoles[T]) path(base []any, i int) []any {
	if r.List {
		return at(base, i)
	}
	return base
}

// roleShape tells the shape check that a field takes one T or a list of them.
func (r *rawRoles[T]) roleElem() reflect.Type { return reflect.TypeFor[T]() }

type roleShape interface{ roleElem() reflect.Type }

// checkRoles is the shape check of a one-or-many role field.
func (c *shapeChecker) checkRoles(n *yaml.Node, elem reflect.Type, segs []any) {
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			c.fail(segs, n, "must be a mapping, or a list of at least one mapping, got an empty list")
			return
		}
		for i, e := range n.Content {
			c.check(e, elem, at(segs, i))
		}
		return
	}
	c.check(n, elem, segs)
}

package main

import (
	"fmt"
	"testing"
)

func productObj(id, name string) string {
	return fmt.Sprintf(`{"id":%q,"object":"product","active":true,"name":%q,"metadata":{}}`, id, name)
}

// product.updated is applied only when newer than the last applied event;
// product.deleted leaves a tombstone a late older update does not undo.
func TestProductsOrderedByCreated(t *testing.T) {
	for _, d := range []Defect{DefectNone, DefectProductUnordered} {
		sh := newShop(t, Config{Defect: d})
		prod := uniq("prod")
		t0 := now() - 100
		for _, e := range []struct {
			name    string
			created int64
		}{{"v1", t0 + 1}, {"v3", t0 + 3}, {"v2", t0 + 2}} {
			if got := sh.deliver("live", "acct_a", event(uniq("evt"), "product.updated", e.created, productObj(prod, e.name))); got != 200 {
				t.Fatalf("%s %s: %d", d, e.name, got)
			}
		}
		n := sh.count(`SELECT count(*) FROM products WHERE id = $1 AND name = 'v3' AND last_event_at = to_timestamp($2)`, prod, t0+3)
		switch {
		case d == DefectNone && n != 1:
			t.Errorf("a late older update regressed the product")
		case d == DefectProductUnordered && n != 0:
			t.Errorf("product-unordered: the late older update was not applied: the defect does not show")
		}
	}
	sh := newShop(t, Config{})
	prod := uniq("prod")
	t0 := now() - 100
	sh.deliver("live", "acct_a", event(uniq("evt"), "product.updated", t0+1, productObj(prod, "v1")))
	sh.deliver("live", "acct_a", event(uniq("evt"), "product.deleted", t0+3, productObj(prod, "v1")))
	sh.deliver("live", "acct_a", event(uniq("evt"), "product.updated", t0+2, productObj(prod, "v2")))
	if n := sh.count(`SELECT count(*) FROM products WHERE id = $1 AND deleted_at IS NULL`, prod); n != 0 {
		t.Errorf("a late update older than the deletion brought the product back")
	}
}

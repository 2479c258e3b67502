package main

import (
	"fmt"
	"sort"
)

// Defect is a planted bug, off by default. Each is a mistake real Stripe
// receivers make; they exist so that a conformance suite can be shown to catch
// them.
type Defect string

const (
	DefectNone = Defect("")
	// DefectLateOverwrite: payment_intent events set the status without checking
	// the current one, so a late payment_failed regresses a succeeded payment.
	DefectLateOverwrite = Defect("late-overwrite")
	// DefectMissingAck: an event for a payment the shop does not have (yet) is
	// acknowledged and recorded as processed; the change is lost.
	DefectMissingAck = Defect("missing-ack")
	// DefectSmallBodyCap: a 64 KB body cap, below what Stripe sends for large
	// objects.
	DefectSmallBodyCap = Defect("small-body-cap")
	// DefectMemoryDedup: processed event IDs are remembered in process memory
	// and checked before the transaction; the stripe_events insert no longer
	// decides. Lost on restart, and racing copies all pass.
	DefectMemoryDedup = Defect("memory-dedup")
	// DefectHardDelete: customer.deleted deletes the row, so a customer.updated
	// older than the deletion that arrives after it upserts the customer back.
	DefectHardDelete = Defect("hard-delete")
	// DefectRefundLateFailure: refund.failed sets the refund's status whatever
	// it is, so a late failure overwrites a refund Stripe already confirmed
	// as succeeded.
	DefectRefundLateFailure = Defect("refund-late-failure")
	// DefectProductUnordered: product.updated overwrites the product whatever
	// the event's created, so a late older update regresses the catalogue.
	DefectProductUnordered = Defect("product-unordered")
)

var defects = map[Defect]bool{DefectLateOverwrite: true, DefectMissingAck: true, DefectSmallBodyCap: true, DefectMemoryDedup: true, DefectHardDelete: true,
	DefectRefundLateFailure: true, DefectProductUnordered: true}

func defectNames() []string {
	var out []string
	for d := range defects {
		out = append(out, string(d))
	}
	sort.Strings(out)
	return out
}

func parseDefect(s string) (Defect, error) {
	if s == "" || s == "none" {
		return DefectNone, nil
	}
	if !defects[Defect(s)] {
		return "", fmt.Errorf("unknown defect %q (known: %v)", s, defectNames())
	}
	return Defect(s), nil
}

package main

import (
	"fmt"
	"sort"
)

// Defect is a planted bug, off by default: a mistake real signature checks
// make, there so that a conformance suite can be shown to catch it.
type Defect string

const (
	DefectNone = Defect("")
	// DefectStaleAccepted: the timestamp's age is not checked, so a captured
	// delivery can be replayed forever.
	DefectStaleAccepted = Defect("stale-accepted")
	// DefectFutureAccepted: only the age is checked; a timestamp any distance
	// ahead passes, so a delivery signed ahead of time stays valid for as long.
	DefectFutureAccepted = Defect("future-accepted")
	// DefectSignaturePrefix: the signature is compared over the bytes the
	// header gives, so a truncated (or empty after a hex byte) signature
	// passes.
	DefectSignaturePrefix = Defect("signature-prefix")
)

var defects = map[Defect]bool{DefectStaleAccepted: true, DefectFutureAccepted: true, DefectSignaturePrefix: true}

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

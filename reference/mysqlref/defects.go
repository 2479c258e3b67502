package mysqlref

import (
	"fmt"
	"strings"
)

// Defect names.
const (
	// DefectCheckThenInsert: no unique key on the event key; the handler asks
	// whether the key exists, then inserts it.
	DefectCheckThenInsert = "check-then-insert"
	// DefectAckBeforeCommit: the 2xx goes out once the key is inserted, before
	// the effect and the commit.
	DefectAckBeforeCommit = "ack-before-commit"
	// DefectLastWriteWins: subscription updates overwrite whatever version is
	// stored.
	DefectLastWriteWins = "last-write-wins"
)

// Defect is one named, deliberate bug the receiver can be started with.
type Defect struct {
	Name, Description string
}

var defectTable = []Defect{
	{DefectCheckThenInsert, "no unique key on the event key: SELECT whether it exists, then INSERT it; concurrent copies all pass the SELECT and all apply"},
	{DefectAckBeforeCommit, "answer 200 once the event key is inserted, then apply the effect and COMMIT: a crash or lost connection after the answer loses an acknowledged event"},
	{DefectLastWriteWins, "subscription updates overwrite the stored row whatever its version: an older update arriving late regresses it, or brings a deleted one back"},
}

// Defects lists the defects, in a stable order.
func Defects() []Defect { return append([]Defect(nil), defectTable...) }

// DefectNames lists the defects' names.
func DefectNames() []string {
	out := make([]string, len(defectTable))
	for i, d := range defectTable {
		out[i] = d.Name
	}
	return out
}

// ValidateDefects refuses an unknown or repeated name, listing the valid ones.
func ValidateDefects(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		known := false
		for _, d := range defectTable {
			known = known || d.Name == n
		}
		if !known {
			return fmt.Errorf("unknown defect %q (valid: %s)", n, strings.Join(DefectNames(), ", "))
		}
		if seen[n] {
			return fmt.Errorf("defect %q given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// defectSet is the defects a server was started with.
type defectSet map[string]bool

func (d defectSet) has(name string) bool { return d[name] }

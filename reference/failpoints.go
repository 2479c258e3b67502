package reference

// fpPoint names a place in the delivery path where a failpoint can crash the
// process or inject an error (the reference/failpoint package arms them).
type fpPoint int

const (
	// fpAfterInsertBeforeCommit: key and business change written, not committed.
	fpAfterInsertBeforeCommit fpPoint = iota
	// fpAfterCommitBeforeResponse: committed, no response written yet.
	fpAfterCommitBeforeResponse
	// fpAfterResponse: the 2xx has been written and flushed.
	fpAfterResponse
)

func (p fpPoint) String() string {
	switch p {
	case fpAfterInsertBeforeCommit:
		return "after-insert-before-commit"
	case fpAfterCommitBeforeResponse:
		return "after-commit-before-response"
	case fpAfterResponse:
		return "after-response"
	}
	return "unknown"
}

// hitter is the failpoint seam: the failpoint registry in production, nothing when
// failpoints are disabled, a recorder in tests that observe placement.
type hitter interface {
	hit(p fpPoint, eventID string) error
	// idle reports that no point is armed, so that no hit can do anything: the
	// delivery may then take a path that does not stop between its writes and
	// its commit (processOneTx's credit in one round trip).
	idle() bool
}

type noFailpoints struct{}

func (noFailpoints) hit(fpPoint, string) error { return nil }
func (noFailpoints) idle() bool                { return true }

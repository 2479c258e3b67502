package scenarios

// Roles and phases are the names attempts and reads carry in the history: a
// scenario sends each delivery as a role and reads the receiver's state in a
// phase, and its checker finds them there by the same names. These are the
// ones several families share; a family's own are declared in its file. They
// are part of the history format (docs/history.md): never renamed.
const (
	// roleFirst is an event's first delivery; roleRedelivery the provider's
	// redelivery of it; roleResend a later resend (a person's, say).
	roleFirst      = "first"
	roleRedelivery = "redelivery"
	roleResend     = "resend"
	// roleCopy is one of several copies (or events) released together.
	roleCopy = "copy"
	// roleOtherScope is the same event ID in another account or source.
	roleOtherScope = "other-scope"
	// roleSetup brings a lifecycle object to the state a scenario needs.
	roleSetup = "setup"
	// roleDoomed is a delivery whose transaction the harness cuts (cut.go).
	roleDoomed = "doomed"
	// roleLoad is one of many events sent at once (ACK).
	roleLoad = "load"
	// roleAccept is an event accepted for the receiver's workers (INBOX).
	roleAccept = "accept"

	// phaseAfter is the read a scenario settles on at its end.
	phaseAfter = "after"
	// phaseAfterFirst is read after an event's first delivery.
	phaseAfterFirst = "after-first"
	// phaseAfterCrash is read after a crash before (or after) commit and a
	// restart; phaseAfterCut after a cut the receiver survived.
	phaseAfterCrash = "after-crash"
	phaseAfterCut   = "after-cut"
	// phaseAfterRefusal is read after the receiver refused an event.
	phaseAfterRefusal = "after-refusal"
	// phaseAfterRestart is read once a killed receiver was restarted.
	phaseAfterRestart = "after-restart"
	// phaseQuiesce marks the reads made between scenarios while waiting for the
	// previous one's deliveries to land; no checker judges them.
	phaseQuiesce = "quiesce"
)

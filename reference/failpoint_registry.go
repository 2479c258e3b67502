package reference

import (
	"net/http"

	"github.com/hookcert/hookcert/reference/failpoint"
)

// registryHitter maps the receiver's points onto the failpoint registry's.
type registryHitter struct{ r *failpoint.Registry }

func (h registryHitter) hit(p fpPoint, eventID string) error {
	var fp failpoint.Point
	switch p {
	case fpAfterInsertBeforeCommit:
		fp = failpoint.AfterInsertBeforeCommit
	case fpAfterCommitBeforeResponse:
		fp = failpoint.AfterCommitBeforeResponse
	default:
		fp = failpoint.AfterResponse
	}
	return h.r.Hit(fp, eventID)
}

func (h registryHitter) idle() bool { return h.r.Idle() }

// newFailpoints builds the failpoint registry and its control surface.
func newFailpoints(crash func()) (hitter, http.Handler) {
	r := failpoint.New(crash)
	return registryHitter{r}, r.Handler()
}

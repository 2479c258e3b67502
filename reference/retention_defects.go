package reference

import (
	"time"

	"github.com/hookcert/hookcert/reference/store"
)

// The retention defects: each wraps the purge's cut-off step (steps.purgeScope;
// the correct one is purgeScope in retention.go). serverDefects
// (handler_defects.go) installs them; purge-pending and no-ttl-floor are one-line
// entries there.

// installShortRetention keeps keys one hour whatever the config says ("5 minutes
// is enough"). Wrong: a redelivery or resend after an hour is applied again.
func installShortRetention(s *Server) {
	next := s.steps.purgeScope
	s.steps.purgeScope = func(source, account string, _, payloadTTL time.Duration, asOf time.Time) store.PurgeScope {
		return next(source, account, shortRetentionTTL, payloadTTL, asOf)
	}
}

// installPurgeAll deletes every key older than the payload TTL. Wrong: replays
// inside the key TTL are applied again.
func installPurgeAll(s *Server) {
	next := s.steps.purgeScope
	s.steps.purgeScope = func(source, account string, _, payloadTTL time.Duration, asOf time.Time) store.PurgeScope {
		return next(source, account, payloadTTL, payloadTTL, asOf)
	}
}

// installKeepPayloads never purges payloads on their own. Wrong: personal data is
// kept until its key goes.
func installKeepPayloads(s *Server) {
	next := s.steps.purgeScope
	s.steps.purgeScope = func(source, account string, keyTTL, payloadTTL time.Duration, asOf time.Time) store.PurgeScope {
		sc := next(source, account, keyTTL, payloadTTL, asOf)
		sc.PayloadCutoff = time.Time{}
		return sc
	}
}

// installKeepKeysForever never deletes keys. Wrong: the key table grows forever
// and data is kept with no end.
func installKeepKeysForever(s *Server) {
	next := s.steps.purgeScope
	s.steps.purgeScope = func(source, account string, keyTTL, payloadTTL time.Duration, asOf time.Time) store.PurgeScope {
		sc := next(source, account, keyTTL, payloadTTL, asOf)
		sc.KeyCutoff = time.Time{}
		return sc
	}
}

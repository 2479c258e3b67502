// Package purge triggers a receiver's retention purge "as of" a chosen time, the
// way its target file declares (target.retention.purge): a SQL statement run with
// $1 = the as-of time, a command with the time substituted for {{.AsOf}}, or an
// HTTP call carrying {"as_of": "<RFC 3339>"}. The harness cannot wait days for keys
// to expire, so it asks for purges with future as-of times instead.
package purge

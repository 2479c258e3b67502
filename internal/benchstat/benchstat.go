// Package benchstat holds the statistics the benchmarks share: they report
// medians, since one round moves with a shared machine's load.
package benchstat

import "slices"

// Median is the middle value of v (the mean of the two middle ones when the
// count is even; 0 for none). v is not changed.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

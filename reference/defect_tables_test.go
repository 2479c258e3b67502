package reference

import (
	"slices"
	"testing"
)

// Every defect is installed by the table of the part it breaks, once: a name
// missing from every table would run as the correct receiver.
func TestEveryDefectHasItsSteps(t *testing.T) {
	installed := map[string]int{}
	count := func(table string, names []string) {
		seen := map[string]bool{}
		for _, n := range names {
			if _, ok := defectTable[n]; !ok {
				t.Errorf("%s: %q is not a defect", table, n)
			}
			if seen[n] {
				t.Errorf("%s: %q listed twice", table, n)
			}
			seen[n] = true
			installed[n]++
		}
	}
	var server, workers, dispatcher []string
	for _, d := range serverDefects {
		server = append(server, d.name)
	}
	for _, d := range workerDefects {
		workers = append(workers, d.name)
		if defectScopes[d.name] != scopeInbox {
			t.Errorf("workerDefects: %q is not an inbox defect", d.name)
		}
	}
	for _, d := range dispatcherDefects {
		dispatcher = append(dispatcher, d.name)
		if defectScopes[d.name] != scopeOutbox {
			t.Errorf("dispatcherDefects: %q is not an outbox defect", d.name)
		}
	}
	count("serverDefects", server)
	count("workerDefects", workers)
	count("dispatcherDefects", dispatcher)
	for _, n := range DefectNames() {
		if installed[n] == 0 {
			t.Errorf("defect %q: no table installs it", n)
		}
	}
	// requeue-on-boot is the one defect of two parts: the start-up (serve and
	// worker) and the workers' missing reconciler.
	if !slices.Contains(server, DefectRequeueOnBoot) || !slices.Contains(workers, DefectRequeueOnBoot) {
		t.Errorf("%s: want it in serverDefects and workerDefects", DefectRequeueOnBoot)
	}
}

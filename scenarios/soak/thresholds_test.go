package soak

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookcert/hookcert/history"
	"github.com/hookcert/hookcert/reports"
)

func TestParseThreshold(t *testing.T) {
	for _, c := range []struct {
		in, metric, op, unit string
		limit                float64
	}{
		{"p99<250ms", "p99", "<", "ms", 250},
		{" p99 < 250ms ", "p99", "<", "ms", 250},
		{"p(95)<=1.5s", "p95", "<=", "ms", 1500},
		{"p50<800us", "p50", "<", "ms", 0.8},
		{"p90<1µs", "p90", "<", "ms", 0.001},
		{"p99.9<1s", "p99.9", "<", "ms", 1000},
		{"max<2s", "max", "<", "ms", 2000},
		{"avg<=40ms", "avg", "<=", "ms", 40},
		{"rate>800/s", "rate", ">", "/s", 800},
		{"rate>=48000/m", "rate", ">=", "/s", 800},
		{"ack_rate>0.5/s", "ack_rate", ">", "/s", 0.5},
		{"failed<1%", "failed", "<", "%", 1},
		{"failed<=0.01", "failed", "<=", "%", 1},
		{"failed<0%", "failed", "<", "%", 0},
	} {
		got, err := ParseThreshold(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got.Metric != c.metric || got.Comparator != c.op || got.Unit != c.unit || round3(got.Limit) != c.limit {
			t.Errorf("%q: got %+v, want %s %s %g %s", c.in, got, c.metric, c.op, c.limit, c.unit)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"", "empty threshold"},
		{"p99", "no comparator"},
		{"<250ms", "no metric"},
		{"p99<", "no value"},
		{"p99==250ms", `comparator "=="`},
		{"p99=250ms", `comparator "="`},
		{"p99!=250ms", `comparator "!="`},
		{"p99<>250ms", `comparator "<>"`},
		{"p99<250", "needs its unit"},
		{"p99<-5ms", "must be positive"},
		{"p100<1s", "between 0 and 100"},
		{"p0<1s", "between 0 and 100"},
		{"pxx<1s", "percentile"},
		{"latency<1s", `unknown metric "latency"`},
		{"rate>800", "per second or per minute"},
		{"rate>800/h", "per second or per minute"},
		{"rate>fast/s", "not a non-negative number"},
		{"rate>-1/s", "not a non-negative number"},
		{"failed<2", "not a share"},
		{"failed<101%", "not a share"},
		{"failed<x%", "not a share"},
	} {
		_, err := ParseThreshold(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: error %v, want it to say %q", c.in, err, c.says)
		}
	}
	if _, err := ParseThresholds([]string{"p99<1s", "p99<"}); err == nil || !strings.HasPrefix(err.Error(), `"p99<": `) {
		t.Errorf("ParseThresholds names the bad threshold: %v", err)
	}
}

// Thresholds are judged on the attempts that started in the measure phase,
// from a hand-made set of latencies: warm-up and drain attempts (slow here)
// weigh on nothing, the soak's own lost acknowledgements are no failure, and a
// figure the phase cannot give is an error, never a pass.
func TestJudgeThresholds(t *testing.T) {
	A, F, U := history.OutcomeAcknowledged, history.OutcomeFailed, history.OutcomeUnknown
	var as []history.Attempt
	// Warm-up [0, 1s): ten slow attempts, one failed.
	for i := range 10 {
		as = append(as, att("w", A, int64(i*10), int64(i*10)+900))
	}
	as = append(as, att("wf", F, 500, 510))
	// Measure [1s, 3s): 100 acknowledged at 1..100 ms, two failed, one lost
	// acknowledgement the soak dropped itself.
	for i := 1; i <= 100; i++ {
		as = append(as, att("m", A, 1000+int64(i)*10, 1000+int64(i)*11))
	}
	as = append(as, att("mf", F, 1500, 1501), att("mf", U, 1600, 1700))
	lost := att("ml", U, 1700, 1800)
	lost.Role = RoleLostAck
	as = append(as, lost)
	// Drain [3s, 4s): slow again, ending after traffic.
	as = append(as, att("d", A, 3100, 9000), att("d", F, 3200, 3201))
	h := &history.History{Attempts: as}

	ts, err := ParseThresholds([]string{"p50<=50ms", "p90<90ms", "p99<100ms", "max<=100ms", "avg<51ms",
		"rate>51/s", "ack_rate>=50/s", "failed<2%", "failed<=0.02", "p99<1us", "rate>100/s"})
	if err != nil {
		t.Fatal(err)
	}
	o := reports.SoakRun{Duration: "2s", Warmup: "1s", Drain: "1s"}
	phases, from, to, err := phasesOf(o, int64(4*time.Second), reports.SoakSettle{DurationMS: 500})
	if err != nil {
		t.Fatal(err)
	}
	if from != int64(time.Second) || to != int64(3*time.Second) || len(phases) != 4 || phases[2] != (reports.SoakPhase{Name: PhaseDrain, StartMS: 3000, EndMS: 4000}) ||
		phases[3] != (reports.SoakPhase{Name: PhaseSettle, StartMS: 4000, EndMS: 4500}) {
		t.Fatalf("phases %+v, measure %d–%d", phases, from, to)
	}
	m := measure(h, from, to)
	if m.m.Attempts != 103 || m.m.Acknowledged != 100 || m.m.Failed != 2 || m.m.DeliveriesPerS != 51.5 || m.m.AcksPerS != 50 || m.m.Latency.P99MS != 99 {
		t.Errorf("measure %+v", m.m)
	}
	want := map[string]struct {
		verdict  string
		measured float64
	}{
		"p50<=50ms": {"pass", 50}, "p90<90ms": {"fail", 90}, "p99<100ms": {"pass", 99}, "max<=100ms": {"pass", 100},
		"avg<51ms": {"pass", 50.5}, "rate>51/s": {"pass", 51.5}, "ack_rate>=50/s": {"pass", 50},
		"failed<2%": {"pass", 1.942}, "failed<=0.02": {"pass", 1.942}, "p99<1us": {"fail", 99}, "rate>100/s": {"fail", 51.5},
	}
	got := judgeThresholds(ts, m)
	if len(got) != len(want) {
		t.Fatalf("%d verdicts, want %d", len(got), len(want))
	}
	for _, r := range got {
		if w := want[r.Threshold]; r.Verdict != w.verdict || r.Measured != w.measured {
			t.Errorf("%s: %s measured %g, want %s measured %g", r.Threshold, r.Verdict, r.Measured, w.verdict, w.measured)
		}
	}

	// Nothing acknowledged in the phase: latency and a phase that never ran
	// are errors; a rate of zero is a measurement.
	none := measure(&history.History{Attempts: []history.Attempt{att("x", F, 1500, 1501)}}, from, to)
	for _, r := range judgeThresholds(ts, none) {
		switch {
		case r.Metric == "rate" || r.Metric == "ack_rate" || r.Metric == "failed":
			if r.Verdict == reports.ThresholdError {
				t.Errorf("%s: %s", r.Threshold, r.Reason)
			}
		case r.Verdict != reports.ThresholdError:
			t.Errorf("%s with nothing acknowledged: %s", r.Threshold, r.Verdict)
		}
	}
	for _, r := range judgeThresholds(ts, measure(h, 0, 0)) {
		if r.Verdict != reports.ThresholdError || r.Reason != "the measure phase never ran" {
			t.Errorf("%s without a measure phase: %s %s", r.Threshold, r.Verdict, r.Reason)
		}
	}
}

// Without phases, the measure phase is the whole traffic; with a warm-up
// alone it runs to traffic's end; an interrupted soak cuts it short.
func TestPhasesOf(t *testing.T) {
	s := int64(time.Second)
	for _, c := range []struct {
		o        reports.SoakRun
		traffic  int64
		from, to int64
		names    string
	}{
		{reports.SoakRun{Duration: "5s"}, 5*s + 3e6, 0, 5*s + 3e6, "measure"},
		{reports.SoakRun{Duration: "5s", Warmup: "2s"}, 7 * s, 2 * s, 7 * s, "warmup measure"},
		{reports.SoakRun{Duration: "5s", Warmup: "2s", Drain: "1s"}, 8 * s, 2 * s, 7 * s, "warmup measure drain"},
		{reports.SoakRun{Duration: "5s", Warmup: "2s", Drain: "1s"}, 4 * s, 2 * s, 4 * s, "warmup measure"},
		{reports.SoakRun{Duration: "5s", Warmup: "2s", Drain: "1s"}, s, s, s, "warmup"},
	} {
		ps, from, to, err := phasesOf(c.o, c.traffic, reports.SoakSettle{})
		var names []string
		for _, p := range ps {
			names = append(names, p.Name)
		}
		if err != nil || from != c.from || to != c.to || strings.Join(names, " ") != c.names {
			t.Errorf("%+v over %d: %v %d–%d %v", c.o, c.traffic, names, from, to, err)
		}
	}
	if _, _, _, err := phasesOf(reports.SoakRun{Duration: "5s", Warmup: "soon"}, s, reports.SoakSettle{}); err == nil || !strings.Contains(err.Error(), "options.warmup") {
		t.Errorf("bad stored warmup: %v", err)
	}
}

// The thresholds are in the history's meta: Results re-judges them from a
// stored history, a breach fails the soak, and a bad stored threshold is an
// error naming where it is.
func TestResultsJudgeStoredThresholds(t *testing.T) {
	A := history.OutcomeAcknowledged
	h := &history.History{
		Meta:     history.Meta{RunID: "r1", Seed: 7, Plan: Plan},
		Attempts: []history.Attempt{att("a", A, 100, 110), att("b", A, 200, 240)},
	}
	h.Observations = append(reads("a", 1, 1), reads("b", 1, 1)...)
	info := RunInfo{Options: reports.SoakRun{Duration: "1s", Thresholds: []string{"p99<100ms", "rate>1/s"}}, TrafficNS: int64(time.Second)}
	h.Meta.Run, _ = json.Marshal(info)
	r, err := Results(h)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Soak.Passed || len(r.Soak.Thresholds) != 2 || r.Soak.Breached() != 0 {
		t.Errorf("passed %v, thresholds %+v", r.Soak.Passed, r.Soak.Thresholds)
	}
	info.Options.Thresholds = []string{"p99<30ms", "rate>1/s"}
	h.Meta.Run, _ = json.Marshal(info)
	if r, _ = Results(h); r.Soak.Passed || r.Soak.Breached() != 1 || r.Soak.Thresholds[0].Measured != 40 {
		t.Errorf("breach: passed %v, thresholds %+v", r.Soak.Passed, r.Soak.Thresholds)
	}
	info.Options.Thresholds = []string{"p99~30ms"}
	h.Meta.Run, _ = json.Marshal(info)
	if _, err := Results(h); err == nil || !strings.Contains(err.Error(), "options.thresholds") {
		t.Errorf("bad stored threshold: %v", err)
	}
}

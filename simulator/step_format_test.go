package simulator

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// stepShapePlan is a plan whose steps set every sending option (attempt,
// faults, timeout, pad_to) at the step level, written as yaml.Marshal writes
// it: the order plans have always been written in.
const stepShapePlan = `name: shape
seed: 7
events:
    - name: e
      type: t
steps:
    - name: first
      event: e
      wait: 1m0s
      copies: 2
      faults:
        lost_ack: close
        stale_by: 1m0s
      retry: true
      timeout: 2s
      attempt: 2
    - event: e
      timeout: 1s
      replay:
        of: first
      attempt: 3
      pad_to: 4096
    - event: e
      with_previous: true
timeout: 3s
`

// stepShapePlanJSON is the same plan as encoding/json writes it.
const stepShapePlanJSON = `{"name":"shape","seed":7,"events":[{"name":"e","type":"t"}],"steps":[` +
	`{"name":"first","event":"e","wait":"1m0s","copies":2,"faults":{"lost_ack":"close","stale_by":"1m0s"},"retry":true,"timeout":"2s","attempt":2},` +
	`{"event":"e","faults":{},"timeout":"1s","replay":{"of":"first"},"attempt":3,"pad_to":4096},` +
	`{"event":"e","faults":{},"with_previous":true}],"timeout":"3s"}`

// A step's sending options read and write byte for byte as they always have,
// in YAML and in JSON, and an unknown field inside a step is still an error
// naming it.
func TestStepShapeFieldsRoundTrip(t *testing.T) {
	p, err := ParsePlan([]byte(stepShapePlan))
	if err != nil {
		t.Fatal(err)
	}
	s0, s1 := p.Steps[0], p.Steps[1]
	if s0.Attempt != 2 || s0.Faults.LostAck != LostAckClose || s0.Faults.StaleBy.D().Minutes() != 1 || s0.Timeout.D().Seconds() != 2 ||
		s1.Attempt != 3 || s1.PadTo != 4096 || s1.Timeout.D().Seconds() != 1 || s1.Replay == nil || !p.Steps[2].WithPrevious {
		t.Fatalf("parsed steps wrong: %+v", p.Steps)
	}

	y, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(y) != stepShapePlan {
		t.Errorf("YAML round trip changed the plan:\n%s\nwant\n%s", y, stepShapePlan)
	}

	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(j) != stepShapePlanJSON {
		t.Errorf("JSON plan:\n%s\nwant\n%s", j, stepShapePlanJSON)
	}
	var back Plan
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, p) {
		t.Errorf("JSON round trip changed the plan:\n%+v\n%+v", back, *p)
	}

	for field, src := range map[string]string{
		"pad_too": strings.Replace(stepShapePlan, "pad_to: 4096", "pad_too: 4096", 1),
		"colour":  strings.Replace(stepShapePlan, "attempt: 2\n", "attempt: 2\n      colour: red\n", 1),
		"tamperd": strings.Replace(stepShapePlan, "lost_ack: close", "tamperd: true", 1),
	} {
		if _, err := ParsePlan([]byte(src)); err == nil || !strings.Contains(err.Error(), "field "+field+" not found") {
			t.Errorf("unknown field %s: want an error naming it, got %v", field, err)
		}
	}
}

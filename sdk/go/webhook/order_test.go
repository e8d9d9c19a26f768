package webhook

import (
	"encoding/json"
	"testing"
)

func event(t *testing.T, body string) *Event {
	t.Helper()
	var e Event
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

func TestResource(t *testing.T) {
	for body, want := range map[string]string{
		`{"type":"splat.updated","sequence":3,"data":{"splat":{"id":"s1","title":"x"}}}`:                   "splat/s1",
		`{"type":"splat.deleted","sequence":4,"data":{"splatId":"s1","externalUserId":"eu"}}`:              "splat/s1",
		`{"type":"retention.purged","sequence":4,"data":{"splatId":"s2","externalUserId":"eu"}}`:           "splat/s2",
		`{"type":"clone.succeeded","sequence":5,"data":{"jobId":"j","splatId":"s3","sourceSplatId":"s1"}}`: "splat/s3",
		`{"type":"clone.failed","sequence":6,"data":{"jobId":"j","sourceSplatId":"s1","message":"m"}}`:     "cloneJob/j",
		`{"type":"externalUser.deleted","sequence":7,"data":{"externalUserId":"eu"}}`:                      "externalUser/eu",
	} {
		got, err := event(t, body).Resource()
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", body, got, err, want)
		}
	}
	for _, body := range []string{
		`{"type":"splat.exploded","sequence":1,"data":{"splatId":"s1"}}`,
		`{"type":"splat.updated","sequence":1,"data":{"splatId":"s1"}}`,
		`{"type":"splat.deleted","sequence":1,"data":{}}`,
	} {
		if _, err := event(t, body).Resource(); err == nil {
			t.Errorf("%s: no resource, yet no error", body)
		}
	}
}

// TestLatestOrdersOutOfOrderArrivals replays the arrival order measured after a receiver outage
// (created after deleted; updates t1, t3, t2): only the newest event of each scene is applied,
// and the scene ends deleted.
func TestLatestOrdersOutOfOrderArrivals(t *testing.T) {
	created := `{"type":"splat.created","sequence":10,"data":{"splat":{"id":"a","title":"t0"}}}`
	t1 := `{"type":"splat.updated","sequence":12,"data":{"splat":{"id":"a","title":"t1"}}}`
	t2 := `{"type":"splat.updated","sequence":15,"data":{"splat":{"id":"a","title":"t2"}}}`
	t3 := `{"type":"splat.updated","sequence":19,"data":{"splat":{"id":"a","title":"t3"}}}`
	other := `{"type":"splat.updated","sequence":11,"data":{"splat":{"id":"b","title":"b1"}}}`
	deleted := `{"type":"splat.deleted","sequence":23,"data":{"splatId":"a","externalUserId":"eu"}}`
	var l Latest
	state := map[string]string{}
	for _, step := range []struct {
		body  string
		apply bool
	}{
		{t1, true}, {t3, true}, {other, true}, {t2, false}, {t3, false}, {deleted, true}, {created, false},
	} {
		e := event(t, step.body)
		got, err := l.Apply(e)
		if err != nil {
			t.Fatal(err)
		}
		if got != step.apply {
			t.Fatalf("Apply(%s) = %v, want %v", step.body, got, step.apply)
		}
		if got {
			r, _ := e.Resource()
			state[r] = e.Type
		}
	}
	if state["splat/a"] != SplatDeleted || state["splat/b"] != SplatUpdated {
		t.Fatalf("final state %v", state)
	}
}

func TestLatestCountsAMissingSequenceAsOldest(t *testing.T) {
	var l Latest
	old := event(t, `{"type":"splat.updated","data":{"splat":{"id":"a"}}}`)
	now := event(t, `{"type":"splat.updated","sequence":1,"data":{"splat":{"id":"a"}}}`)
	if ok, _ := l.Apply(now); !ok {
		t.Fatal("first sequenced event refused")
	}
	if ok, _ := l.Apply(old); ok {
		t.Fatal("an unsequenced event applied after a sequenced one")
	}
	if _, err := l.Apply(event(t, `{"type":"splat.deleted","sequence":2,"data":{}}`)); err == nil {
		t.Fatal("an event without a resource applied")
	}
}

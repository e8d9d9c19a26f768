package splathost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
)

// pagedServer answers the scene list and a delivery log in pages of the ids of pages, each
// page naming the next by its index; a page listed in fail answers a 404 instead.
func pagedServer(t *testing.T, pages [][]string, fail int) (*httptest.Server, *atomic.Int32) {
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		i := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			i = int(c[0] - '0')
		}
		if i == fail {
			writeJSON(w, 404, `{"status":"error","code":"NOT_FOUND","message":"webhook not found"}`)
			return
		}
		items, list := "", "splats"
		if r.URL.Path != "/api/v1/splats" {
			list = "deliveries"
		}
		for j, id := range pages[i] {
			if j > 0 {
				items += ","
			}
			items += `{"id":"` + id + `"}`
		}
		next := `null`
		if i+1 < len(pages) {
			next = `"` + string(rune('0'+i+1)) + `"`
		}
		writeJSON(w, 200, `{"status":"success","`+list+`":[`+items+`],"nextCursor":`+next+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &fetched
}

func TestIteratorsFollowEveryPage(t *testing.T) {
	pages := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}
	srv, fetched := pagedServer(t, pages, -1)
	c := newTestClient(t, srv, nil)
	var got []string
	for s, err := range c.AllSplats(context.Background(), ListSplatsOptions{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.ID)
	}
	if !reflect.DeepEqual(got, []string{"a", "b", "c", "d", "e"}) || fetched.Load() != 3 {
		t.Fatalf("%v after %d fetches", got, fetched.Load())
	}

	got = nil
	fetched.Store(0)
	for d, err := range c.AllWebhookDeliveries(context.Background(), "wh", 2) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.ID)
		if d.ID == "c" {
			break
		}
	}
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) || fetched.Load() != 2 {
		t.Fatalf("a break stops fetching: %v after %d fetches", got, fetched.Load())
	}
}

func TestIteratorsEndWithTheFailedPagesError(t *testing.T) {
	srv, _ := pagedServer(t, [][]string{{"a"}, {"b"}, {"c"}}, 1)
	var got []string
	var last error
	for d, err := range newTestClient(t, srv, nil).AllWebhookDeliveries(context.Background(), "wh", 1) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, d.ID)
	}
	if !reflect.DeepEqual(got, []string{"a"}) || !IsCode(last, CodeNotFound) {
		t.Fatalf("%v, %v", got, last)
	}
}

func TestIteratorsRefuseARepeatedCursor(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"status":"success","splats":[{"id":"a"}],"nextCursor":"same"}`)
	}))
	defer srv.Close()
	n := 0
	var last error
	for _, err := range newTestClient(t, srv, nil).AllSplats(context.Background(), ListSplatsOptions{}) {
		n++
		last = err
		if n > 10 {
			t.Fatal("the iteration does not end")
		}
	}
	if last == nil || n != 3 {
		t.Fatalf("%d pairs, last error %v", n, last)
	}
}

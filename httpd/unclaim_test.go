package httpd_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// failingWrites is a connection whose reply body never gets out.
type failingWrites struct{ http.ResponseWriter }

func (failingWrites) Write([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

func TestAnAutoAckPopWhoseReplyCannotBeWrittenIsDeliveredOnTheNextPop(t *testing.T) {
	ctx := context.Background()
	s := combtest.MustServer(t, combtest.Options{})
	var want []string
	for _, p := range []string{"p1", "p1", "p2", "p2", "p2"} {
		res, err := s.Broker.Push(ctx, []combtype.PushItem{{Queue: "q", Partition: p, Payload: []byte(`{"p":"` + p + `"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res[0].TxnID)
	}
	h := httpd.NewHandler(s.Broker, httpd.Config{})
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(failingWrites{w}, r)
	}))
	defer broken.Close()
	const pop = "/api/v1/pop/queue/q?batch=10&partitions=2&autoAck=true&consumerGroup=g"
	resp, err := http.Get(broken.URL + pop)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(body) != 0 {
		t.Fatalf("the broken connection delivered %q", body)
	}
	// The claim that never reached the client is not consumed: the group
	// gets every message, once, on its next pop.
	var got []string
	for range 3 {
		for _, m := range s.Pop(pop).Messages {
			got = append(got, m.TransactionID)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("after an undelivered autoAck reply the group got %v, want %v", got, want)
	}
	if r := s.Pop(pop); r.Status != http.StatusNoContent {
		t.Fatalf("a pop past the end = %+v", r)
	}
}

// sentReply records that the connection accepted a whole reply body.
type sentReply struct {
	http.ResponseWriter
	sent *atomic.Bool
}

func (w sentReply) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if err == nil && n > 0 {
		w.sent.Store(true)
	}
	return n, err
}

func TestAnAutoAckPopAbandonedAsAPushWakesItLosesNothing(t *testing.T) {
	ctx := context.Background()
	b := combtest.MustOpenBroker(t, combtest.Options{})
	h := httpd.NewHandler(b, httpd.Config{})
	var served sync.WaitGroup
	var sent atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		defer served.Done()
		h.ServeHTTP(sentReply{w, &sent}, r)
	}))
	defer srv.Close()
	req := combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true}
	if _, err := b.Pop(ctx, req); err != nil { // subscribes g
		t.Fatal(err)
	}
	// Each round parks a pop, wakes it with a push and leaves at once, so
	// the claim lands before the wake, between the wake and the reply, or
	// not at all; whatever the client did not read must come back.
	for round := range 20 {
		sent.Store(false)
		cctx, cancel := context.WithCancel(ctx)
		read := make(chan []byte, 1)
		parked := b.Parked()
		go func() {
			hr, _ := http.NewRequestWithContext(cctx, http.MethodGet,
				srv.URL+"/api/v1/pop/queue/q?wait=true&timeout=5000&batch=10&autoAck=true&consumerGroup=g", nil)
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				read <- nil
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				body = nil
			}
			read <- body
		}()
		for deadline := time.Now().Add(5 * time.Second); b.Parked() == parked; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the pop never parked")
			}
		}
		pushed, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Payload: []byte(`{"n":1}`)}})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		body := <-read
		srv.CloseClientConnections()
		served.Wait()
		res, err := b.Pop(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case (body != nil || sent.Load()) && len(res.Messages) == 0:
			// The client read the reply, or the connection took all of it
			// before the server could tell that the client had left: the
			// message was delivered there.
		case body == nil && !sent.Load() && len(res.Messages) == 1 && res.Messages[0].TxnID == pushed[0].TxnID:
		default:
			t.Fatalf("round %d: the client read %q, the next pop got %d messages", round, body, len(res.Messages))
		}
	}
}

package httpd_test

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/combtest"
)

// Clients of an encrypted queue never see ciphertext: not on pop, not in
// the dead-letter listing; the database never sees the plaintext.
func TestEncryptedQueueOverHTTP(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	s := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.EncryptionKey = key }})
	r := s.Do("POST", "/api/v1/configure", map[string]any{"queue": "vault",
		"options": map[string]any{"encryptionEnabled": true, "retryLimit": 0}})
	if r.Status != http.StatusOK || r.Map(t)["options"].(map[string]any)["encryptionEnabled"] != true {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	s.Push(map[string]any{"queue": "vault", "payload": map[string]any{"pin": "HTTP-SECRET-9876"}, "transactionId": "s1"})
	p := s.Pop("/api/v1/pop/queue/vault?wait=false")
	if len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"pin":"HTTP-SECRET-9876"}` {
		t.Fatalf("pop: %+v", p.Messages)
	}
	if a := s.Ack(p.Messages[0], "failed", ""); a["dlq"] != true {
		t.Fatalf("ack: %v, want a dead letter", a)
	}
	r = s.Do("GET", "/api/v1/dlq?queue=vault", nil)
	var dlq struct {
		Messages []struct {
			Data map[string]any `json:"data"`
		} `json:"messages"`
	}
	r.JSON(t, &dlq)
	if r.Status != http.StatusOK || len(dlq.Messages) != 1 || dlq.Messages[0].Data["pin"] != "HTTP-SECRET-9876" {
		t.Fatalf("dlq: %d %s", r.Status, r.Body)
	}
	path := s.Broker.DatabasePath()
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("HTTP-SECRET")) {
			t.Fatalf("%s holds the payload in clear", f)
		}
	}
}

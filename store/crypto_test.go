package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

var testKey = bytes.Repeat([]byte{0x5a}, combtype.EncryptionKeySize)

func openAt(t *testing.T, path string, key []byte) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: path, EncryptionKey: key})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return st
}

func closeStore(t *testing.T, st *store.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	combtest.CheckInvariants(t, st.Path())
}

func configureQueue(t *testing.T, st *store.Store, name string, encrypted bool, retryLimit int64) {
	t.Helper()
	o := combtype.DefaultQueueOptions()
	o.EncryptionEnabled, o.RetryLimit = encrypted, retryLimit
	if _, _, err := st.Configure(context.Background(), "", combtype.ConfigureRequest{Queue: name, Options: o}); err != nil {
		t.Fatalf("configure: %v", err)
	}
}

func pushPayloads(t *testing.T, st *store.Store, queue string, payloads ...string) {
	t.Helper()
	items := make([]combtype.PushItem, len(payloads))
	for i, p := range payloads {
		items[i] = combtype.PushItem{Queue: queue, Payload: []byte(p)}
	}
	if _, err := st.Push(context.Background(), "", items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

func popAll(t *testing.T, st *store.Store, queue, group string) ([]string, *combtype.PopResult) {
	t.Helper()
	res, err := st.Pop(context.Background(), "", combtype.PopRequest{Queue: queue, Group: group, Batch: 1000})
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	var out []string
	for _, m := range res.Messages {
		out = append(out, string(m.Payload))
	}
	return out, res
}

func fileContains(t *testing.T, path, needle string) bool {
	t.Helper()
	found := false
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		found = found || bytes.Contains(b, []byte(needle))
	}
	return found
}

func TestEncryptedPayloadsNeverReachTheFileInClear(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	st := openAt(t, path, testKey)
	configureQueue(t, st, "sealed", true, 0)
	configureQueue(t, st, "open", false, 3)
	secret := `{"card":"SEALED-4111-1111-1111-1111"}`
	pushPayloads(t, st, "sealed", secret, `{"n":2}`)
	pushPayloads(t, st, "open", `{"note":"OPEN-IN-CLEAR"}`)

	got, res := popAll(t, st, "sealed", "")
	if len(got) != 2 || got[0] != secret || got[1] != `{"n":2}` {
		t.Fatalf("popped %q, want the plaintext payloads", got)
	}
	// The first message fails with retryLimit 0: dead-lettered at once.
	acks, err := st.Ack(ctx, "", "", []combtype.AckItem{{TxnID: res.Messages[0].TxnID, PartitionID: res.PartitionID,
		LeaseID: res.LeaseID, Status: combtype.AckFailed, Error: "declined"}})
	if err != nil || !acks[0].DLQ {
		t.Fatalf("ack: %v %+v, want a dead letter", err, acks)
	}
	var raw []byte
	if err := st.ReadDB().QueryRowContext(ctx, `SELECT payload FROM dlq`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("SEALED")) {
		t.Fatal("the dead-letter copy holds the payload in clear")
	}
	if plain, err := st.DecryptPayload(raw); err != nil || string(plain) != secret {
		t.Fatalf("dead-letter payload decrypts to %q (%v), want %q", plain, err, secret)
	}
	closeStore(t, st)

	if fileContains(t, path, "SEALED-4111") {
		t.Fatal("the database file holds an encrypted queue's payload in clear")
	}
	if !fileContains(t, path, "OPEN-IN-CLEAR") {
		t.Fatal("control: the unencrypted payload is not found in the file, so the scan proves nothing")
	}

	// Without the key the sealed frames do not read; nothing else breaks.
	st = openAt(t, path, nil)
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "sealed", Group: "other", Batch: 10}); !errors.Is(err, combtype.ErrNoEncryptionKey) {
		t.Fatalf("pop without the key: %v, want ErrNoEncryptionKey", err)
	}
	if got, _ := popAll(t, st, "open", ""); len(got) != 1 {
		t.Fatalf("unencrypted queue without the key popped %q", got)
	}
	closeStore(t, st)

	// A wrong key is refused the same way, not answered with garbage.
	wrong := bytes.Repeat([]byte{0x11}, combtype.EncryptionKeySize)
	st = openAt(t, path, wrong)
	if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "sealed", Group: "third", Batch: 10}); !errors.Is(err, combtype.ErrNoEncryptionKey) {
		t.Fatalf("pop with a wrong key: %v, want ErrNoEncryptionKey", err)
	}
	closeStore(t, st)
}

func TestEncryptionToggledLaterStillReadsOlderFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	st := openAt(t, path, testKey)
	defer closeStore(t, st)
	configureQueue(t, st, "q", false, 3)
	pushPayloads(t, st, "q", `"plain-1"`)
	configureQueue(t, st, "q", true, 3)
	pushPayloads(t, st, "q", `"sealed-2"`)
	configureQueue(t, st, "q", false, 3)
	pushPayloads(t, st, "q", `"plain-3"`)
	got, _ := popAll(t, st, "q", "g")
	if strings.Join(got, ",") != `"plain-1","sealed-2","plain-3"` {
		t.Fatalf("popped %q", got)
	}
}

func TestPayloadsThatLookLikeMarkersRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	st := openAt(t, path, nil)
	defer closeStore(t, st)
	odd := []string{"\x00", "\x01abc", "\x00\x01", ""}
	items := make([]combtype.PushItem, len(odd))
	for i, p := range odd {
		items[i] = combtype.PushItem{Queue: "q", Payload: []byte(p)}
	}
	if _, err := st.Push(context.Background(), "", items); err != nil {
		t.Fatal(err)
	}
	got, _ := popAll(t, st, "q", "")
	if len(got) != len(odd) {
		t.Fatalf("popped %d, want %d", len(got), len(odd))
	}
	for i := range odd {
		if got[i] != odd[i] {
			t.Fatalf("payload %d came back %q, want %q", i, got[i], odd[i])
		}
	}
}

func TestParseEncryptionKey(t *testing.T) {
	hexKey := strings.Repeat("ab", combtype.EncryptionKeySize)
	if k, err := store.ParseEncryptionKey(hexKey); err != nil || len(k) != combtype.EncryptionKeySize {
		t.Fatalf("valid key: %v (%d bytes)", err, len(k))
	}
	if k, err := store.ParseEncryptionKey(""); err != nil || k != nil {
		t.Fatalf("empty key: %v %v, want none", k, err)
	}
	for _, bad := range []string{"abc", strings.Repeat("zz", 32), strings.Repeat("ab", 16)} {
		if _, err := store.ParseEncryptionKey(bad); !errors.Is(err, combtype.ErrInvalid) {
			t.Fatalf("key %q: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "x.db"),
		EncryptionKey: []byte("short")}); !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("open with a short key: %v, want ErrInvalid", err)
	}
}

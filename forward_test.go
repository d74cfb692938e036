package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/internal/combtest"
)

// TestForwardersSurviveUpstreamAndDeviceCrashes runs a device and an
// upstream as two comb serve processes. The device buffers while the
// upstream is down; once it is up, the device's push forwarder drains the
// buffer and its pull forwarder brings commands down, through two SIGKILLs
// of the upstream and one of the device. At the end the upstream holds
// exactly the device's messages and the device exactly the upstream's
// commands: none missing, none stored twice, each partition in order.
func TestForwardersSurviveUpstreamAndDeviceCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills server binaries; skipped with -short")
	}
	const (
		telemetry  = 6000 // device -> upstream
		commands   = 3000 // upstream -> device
		partitions = 4
	)
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	upDB, devDB := filepath.Join(dir, "upstream.db"), filepath.Join(dir, "device.db")
	upAddr, devAddr := crashFreeAddr(t), crashFreeAddr(t)
	devFlags := []string{
		"--forward", "name=up,queue=telemetry,batch=50,upstream=http://" + upAddr,
		"--forward", "name=down,direction=pull,queue=commands,batch=50,upstream=http://" + upAddr,
		"--forward-max-backoff", "300ms", "--forward-poll", "1s",
	}
	client := crashNewClient()
	ctx := context.Background()

	dev := crashStartServerAt(t, bin, devDB, "device-1", devAddr, devFlags...)
	sent := forwardPushAll(t, client, dev.base, "telemetry", 0, telemetry, partitions)
	if st := forwardStatus(t, client, dev.base, "up"); st.Lag != telemetry || st.LastError == nil {
		t.Errorf("with the upstream down: lag %d, last error %v; want lag %d and the connection error",
			st.Lag, st.LastError, telemetry)
	}

	up := crashStartServerAt(t, bin, upDB, "upstream-1", upAddr)
	// A pop whose reply an upstream crash swallowed leaves its batch leased
	// upstream until the lease expires; a short lease keeps that wait short.
	if status, body, err := crashDo(ctx, client, http.MethodPost, up.base+"/api/v1/configure",
		map[string]any{"queue": "commands", "options": map[string]any{"leaseTime": 2}}); err != nil || status != http.StatusOK {
		t.Fatalf("configure commands: HTTP %d %v %s", status, err, crashSnippet(body))
	}
	for id, it := range forwardPushAll(t, client, up.base, "commands", 1, commands, partitions) {
		sent[id] = it
	}

	// Kill each side while the buffer is still draining.
	killAt := func(name string, srv *crashServer, below int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			lag := forwardStatus(t, client, dev.base, "up").Lag
			if lag <= below || time.Now().After(deadline) {
				t.Logf("kill -9 %s at device lag %d", name, lag)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		srv.cmd.Process.Kill()
		<-srv.exited
	}
	killAt("upstream-1", up, telemetry*4/5)
	up = crashStartServerAt(t, bin, upDB, "upstream-2", upAddr)
	killAt("device-1", dev, telemetry*3/5)
	dev = crashStartServerAt(t, bin, devDB, "device-2", devAddr, devFlags...)
	killAt("upstream-2", up, telemetry*2/5)
	up = crashStartServerAt(t, bin, upDB, "upstream-3", upAddr)

	deadline := time.Now().Add(30 * time.Second)
	for {
		st := forwardStatus(t, client, dev.base, "up")
		if st.Lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("device lag still %d after 30 s (state %s, last error %v)", st.Lag, st.State, st.LastError)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pull side is done when the upstream group has nothing left.
	for {
		status, body, err := crashDo(ctx, client, http.MethodGet, up.base+"/api/v1/consumer-groups", nil)
		var groups []struct {
			Name     string `json:"name"`
			TotalLag int64  `json:"totalLag"`
		}
		if err == nil && status == http.StatusOK && json.Unmarshal(body, &groups) == nil {
			lag := int64(-1)
			for _, g := range groups {
				if g.Name == "comb-forward.down" {
					lag = g.TotalLag
				}
			}
			if lag == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream group comb-forward.down still lagging after 30 s: %s", crashSnippet(body))
		}
		time.Sleep(50 * time.Millisecond)
	}

	forwardCheckExactly(t, client, up.base, "telemetry", partitions, sent, 0, telemetry)
	forwardCheckExactly(t, client, dev.base, "commands", partitions, sent, 1, commands)
	combtest.CheckInvariants(t, upDB)
	combtest.CheckInvariants(t, devDB)
}

// forwardPushAll pushes n messages to queue in requests of 100, payload
// {producer, seq} spread over partitions, and fails the test unless every
// push is answered 201 queued.
func forwardPushAll(t *testing.T, client *http.Client, base, queue string, producer, n, partitions int) map[string]crashItem {
	t.Helper()
	sent := map[string]crashItem{}
	for start := 0; start < n; start += 100 {
		var items []map[string]any
		for seq := start; seq < min(start+100, n); seq++ {
			id := uuid.Must(uuid.NewV7()).String()
			part := fmt.Sprintf("p%d", seq%partitions)
			sent[id] = crashItem{Producer: producer, Seq: seq, Partition: part}
			items = append(items, map[string]any{"queue": queue, "partition": part, "transactionId": id,
				"payload": map[string]int{"producer": producer, "seq": seq}})
		}
		status, body, err := crashDo(context.Background(), client, http.MethodPost, base+"/api/v1/push", map[string]any{"items": items})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("push to %s: HTTP %d %v %s", queue, status, err, crashSnippet(body))
		}
	}
	return sent
}

type forwardState struct {
	State     string  `json:"state"`
	Lag       int64   `json:"lag"`
	Forwarded int64   `json:"forwarded"`
	LastError *string `json:"lastError"`
}

func forwardStatus(t *testing.T, client *http.Client, base, name string) forwardState {
	t.Helper()
	status, body, err := crashDo(context.Background(), client, http.MethodGet, base+"/api/v1/forwarders/"+name, nil)
	var st forwardState
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("forwarder %s status: HTTP %d %v %s", name, status, err, crashSnippet(body))
	}
	return st
}

// forwardCheckExactly drains queue at base with a fresh group and checks it
// holds each message producer sent exactly once, in order per partition,
// and nothing else.
func forwardCheckExactly(t *testing.T, client *http.Client, base, queue string, partitions int,
	sent map[string]crashItem, producer, want int) {
	t.Helper()
	got, errs := crashDrain(client, base, queue, "verify", partitions, true)
	for _, e := range errs {
		t.Error(e)
	}
	seen := map[string]bool{}
	for _, m := range got {
		if seen[m.TransactionID] {
			t.Errorf("%s: %s delivered twice to one group", queue, m.TransactionID)
		}
		seen[m.TransactionID] = true
	}
	missing := 0
	for id, it := range sent {
		if it.Producer == producer && !seen[id] {
			missing++
		}
	}
	if missing > 0 || len(got) != want {
		t.Errorf("%s: %d messages delivered, %d distinct, %d of %d sent missing", queue, len(got), len(seen), missing, want)
	}
	crashCheckMessages(t, got, sent)
}

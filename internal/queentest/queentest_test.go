package queentest

import (
	"net/http"
	"testing"
)

// The kit starts a Queen that answers /health, and brings it back on the
// same URL after a SIGKILL.
func TestStartKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and Queen")
	}
	q := Start(t)
	health := func() int {
		resp, err := http.Get(q.URL + "/health")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := health(); got != http.StatusOK {
		t.Fatalf("health after start: %d", got)
	}
	q.Kill()
	if got := health(); got == http.StatusOK {
		t.Fatalf("health after kill: %d", got)
	}
	q.Restart()
	if got := health(); got != http.StatusOK {
		t.Fatalf("health after restart: %d", got)
	}
}

package httpd_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
)

// A program that embeds the broker serves the HTTP API (and the console at
// /) from the same process, so Queen's client SDKs and a browser reach the
// queues the program itself uses. When ctx ends, Serve answers parked pops,
// lets requests in flight finish and returns; the broker is closed after.
func ExampleServer() {
	dir, err := os.MkdirTemp("", "comb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := broker.Open(context.Background(), broker.Options{Path: filepath.Join(dir, "app.db")})
	if err != nil {
		log.Fatal(err)
	}

	cfg := httpd.Config{Logger: slog.New(slog.DiscardHandler)}
	ln, err := httpd.Listen("127.0.0.1:0", cfg) // port 0: any free port
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httpd.NewServer(b, cfg).Serve(ctx, ln) }()

	// A client pushes over HTTP; the program pops through the broker.
	resp, err := http.Post("http://"+ln.Addr().String()+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"jobs","payload":{"n":1}}]}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("push over HTTP:", resp.StatusCode)
	res, err := b.Pop(context.Background(), combtype.PopRequest{Queue: "jobs", Batch: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("popped in process:", string(res.Messages[0].Payload))

	stop()
	if err := <-served; err != nil {
		log.Fatal(err)
	}
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// push over HTTP: 201
	// popped in process: {"n":1}
}

// A program without a context for its lifetime stops the server with
// Shutdown, from wherever it learns it should, and closes the broker once
// Serve has returned.
func ExampleServer_Shutdown() {
	dir, err := os.MkdirTemp("", "comb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := broker.Open(context.Background(), broker.Options{Path: filepath.Join(dir, "app.db")})
	if err != nil {
		log.Fatal(err)
	}
	cfg := httpd.Config{Logger: slog.New(slog.DiscardHandler)}
	ln, err := httpd.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	srv := httpd.NewServer(b, cfg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("health:", resp.StatusCode)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("served until shutdown:", <-served == nil)
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// health: 200
	// served until shutdown: true
}

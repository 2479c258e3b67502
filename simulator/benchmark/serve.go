//go:build linux

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// arrivals keeps, per batch, the instants requests finished arriving (the whole
// body read), in ns since the server started.
type arrivals struct {
	mu    sync.Mutex
	start time.Time
	m     map[string][]int64
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ar := &arrivals{start: time.Now(), m: map[string][]int64{}}
	mux := http.NewServeMux()
	ok := []byte(`{"status":"processed"}`)
	mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(ok)
	})
	mux.HandleFunc("POST /spread/{batch}", func(w http.ResponseWriter, r *http.Request) {
		// The arrival is when the whole body is in: a receiver can only verify
		// and process then.
		io.Copy(io.Discard, r.Body)
		t := int64(time.Since(ar.start))
		b := r.PathValue("batch")
		ar.mu.Lock()
		ar.m[b] = append(ar.m[b], t)
		ar.mu.Unlock()
		w.Write(ok)
	})
	mux.HandleFunc("GET /arrivals/{batch}", func(w http.ResponseWriter, r *http.Request) {
		ar.mu.Lock()
		v := ar.m[r.PathValue("batch")]
		delete(ar.m, r.PathValue("batch"))
		ar.mu.Unlock()
		json.NewEncoder(w).Encode(v)
	})
	ts := newTSReceiver()
	mux.HandleFunc("GET /ts-arrivals/{batch}", func(w http.ResponseWriter, r *http.Request) {
		k, u := ts.take(r.PathValue("batch"))
		json.NewEncoder(w).Encode(map[string][]int64{"kernel": k, "user": u})
	})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Set on the listener so accepted sockets inherit it from their first byte:
	// a connection may receive its whole request before the accept loop runs.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	tl, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	go ts.serve(tl)
	// Line 1: the net/http receiver; line 2: the kernel-timestamping receiver.
	fmt.Printf("http://%s\nhttp://%s\n", l.Addr(), tl.Addr())
	srv := &http.Server{Handler: mux}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		srv.Close()
	}()
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

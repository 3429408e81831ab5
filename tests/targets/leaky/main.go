// Command leaky is a program with a memory leak, for the OOM-kill tests and benchmark: it serves
// net/http/pprof and keeps `-rate` bytes per second alive in main.leakIntoCache (a cache nobody
// evicts) until it holds `-limit` bytes (0: no limit, it grows until the kernel kills it), and burns a
// little CPU in main.busyWork so its CPU profile is not empty.
//
// Like tests/targets/workload it binds first, then prints "listening on <addr>", then serves, and with
// -exit-on-stdin-close it exits when its stdin closes.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

var (
	cacheMu sync.Mutex
	cache   [][]byte // what leaks: appended to, never evicted
	held    int64
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6060", "address to serve /debug/pprof on (port 0 picks a free one)")
	rate := flag.Int64("rate", 1<<20, "bytes leaked per second")
	limit := flag.Int64("limit", 0, "stop leaking once this many bytes are held (0: never stop)")
	after := flag.Duration("start-after", 0, "wait this long before leaking")
	exitOnStdinClose := flag.Bool("exit-on-stdin-close", false, "exit when stdin reaches EOF")
	flag.Parse()
	if *exitOnStdinClose {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	}
	runtime.MemProfileRate = 64 * 1024 // a populated heap profile within seconds

	go leak(*rate, *limit, *after)
	go busyWork()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		log.Fatalf("serve: %v", err)
	}
}

// leak adds rate/10 bytes every 100 ms, touching every page so the memory is resident.
func leak(rate, limit int64, after time.Duration) {
	time.Sleep(after)
	step := rate / 10
	for range time.Tick(100 * time.Millisecond) {
		if limit > 0 && held >= limit {
			continue
		}
		leakIntoCache(step)
	}
}

//go:noinline
func leakIntoCache(n int64) {
	buf := make([]byte, n)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	cacheMu.Lock()
	cache = append(cache, buf)
	held += n
	cacheMu.Unlock()
}

//go:noinline
func busyWork() {
	x := uint64(1)
	for {
		for i := 0; i < 2_000_000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x == 0 {
			fmt.Println(x)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

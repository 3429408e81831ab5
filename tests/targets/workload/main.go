// Command workload is the program the tests profile: it serves net/http/pprof and keeps doing
// recognisable work so that every Go profile type (cpu, heap, allocs, goroutine, mutex, block) has
// samples under distinctive function names.
//
// Work runs in short bursts separated by sleeps, so one instance uses roughly a quarter of one core
// and several can run side by side on a small machine.
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
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6060", "address to serve /debug/pprof on (port 0 picks a free one)")
	exitOnStdinClose := flag.Bool("exit-on-stdin-close", false,
		"exit when stdin reaches EOF, so a test run that dies does not leave this program running")
	flag.Parse()
	if *exitOnStdinClose {
		go exitWhenStdinCloses()
	}

	// Sample more allocations than the default (one per 512 KiB) so short runs have a
	// populated allocs profile; record every contention and every blocking event.
	runtime.MemProfileRate = 64 * 1024
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	startWorkers()

	// Bind first, then announce, then serve: whoever reads the line can connect at once.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", ln.Addr())
	if err := http.Serve(ln, nil); err != nil {
		log.Fatalf("serve: %v", err)
	}
}

func exitWhenStdinCloses() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func startWorkers() {
	go cpuLoop()
	go allocChurn()
	startMutexContention(4)
	startChannelBlocking()
	startParkedGoroutines(8)
}

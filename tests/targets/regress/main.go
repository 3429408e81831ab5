// Command regress is a program in two builds for the "what changed" tests and benchmark: it handles
// requests in a loop (main.parse, main.hash, main.render, main.compress), and the build made with
//
//	go build -ldflags "-X main.extraPercent=20"
//
// spends that much more CPU in main.hash. It writes -count CPU profiles of -seconds each into -dir
// (as `go test -cpuprofile` would, one run per file), sampled at -hz (default 1000, ten times Go's
// 100, so short profiles hold enough samples), or with -addr serves net/http/pprof instead.
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
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"
)

var extraPercent = "0" // set with -ldflags "-X main.extraPercent=N"

var sink uint64

var handled atomic.Int64

// Each function spins in a loop of its own, so its CPU is its self time (a shared helper would own it).
// The loops call safePoint now and then: a call is where the scheduler may preempt a goroutine, so none
// is interrupted by a signal (runtime.asyncPreempt), whose frames would take samples from the loops.

//go:noinline
func safePoint() {}

//go:noinline
func parse() {
	x := sink
	for i := 0; i < 200_000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i&0xFFFF == 0 {
			safePoint()
		}
	}
	sink = x
}

//go:noinline
func hash(extra int) {
	x, n := sink, 500_000*(100+extra)/100
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i&0xFFFF == 0 {
			safePoint()
		}
	}
	sink = x
}

//go:noinline
func render() {
	x := sink
	for i := 0; i < 150_000; i++ {
		x = x*2862933555777941757 + 3037000493
		if i&0xFFFF == 0 {
			safePoint()
		}
	}
	sink = x
}

//go:noinline
func compress() {
	x := sink
	for i := 0; i < 150_000; i++ {
		x = x*3202034522624059733 + 1
		if i&0xFFFF == 0 {
			safePoint()
		}
	}
	sink = x
}

//go:noinline
func handle(extra int) {
	parse()
	hash(extra)
	render()
	compress()
}

func main() {
	dir := flag.String("dir", "", "write CPU profiles here (cpu-<i>.pb.gz)")
	count := flag.Int("count", 10, "profiles to write")
	seconds := flag.Float64("seconds", 2, "seconds each profile covers")
	requests := flag.Int64("requests", 0, "instead of -seconds: each profile covers this many requests (about "+
		"1 ms of CPU each), so a busy machine yields profiles as full as an idle one")
	hz := flag.Int("hz", 1000, "CPU profile sampling rate")
	addr := flag.String("addr", "", "serve net/http/pprof here instead (port 0 picks a free one)")
	exitOnStdinClose := flag.Bool("exit-on-stdin-close", false, "exit when stdin reaches EOF")
	flag.Parse()
	if *exitOnStdinClose {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	}
	extra, err := strconv.Atoi(extraPercent)
	if err != nil {
		log.Fatalf("extraPercent %q: %v", extraPercent, err)
	}
	runtime.GOMAXPROCS(1)
	go func() {
		for {
			handle(extra)
			handled.Add(1)
			runtime.Gosched()
		}
	}()
	if *addr != "" {
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatalf("listen %s: %v", *addr, err)
		}
		fmt.Printf("listening on %s\n", ln.Addr())
		log.Fatal(http.Serve(ln, nil))
	}
	for i := 0; i < *count; i++ {
		write(filepath.Join(*dir, fmt.Sprintf("cpu-%d.pb.gz", i)), *hz, time.Duration(*seconds*float64(time.Second)),
			*requests)
	}
}

func write(path string, hz int, d time.Duration, requests int64) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	// Set before StartCPUProfile, which would set 100 Hz: it only warns that the rate is already set.
	runtime.SetCPUProfileRate(hz)
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	if requests > 0 {
		for until := handled.Load() + requests; handled.Load() < until; {
			time.Sleep(time.Millisecond)
		}
	} else {
		time.Sleep(d)
	}
	pprof.StopCPUProfile()
}

package main

import (
	"context"
	"crypto/sha256"
	"runtime/pprof"
	"strconv"
	"time"
)

const (
	cpuBurst = 20 * time.Millisecond
	cpuPause = 130 * time.Millisecond
)

// cpuLoop alternates two CPU burners with pauses: about 2 x 20 ms of work every 170 ms. Each burst
// runs under pprof labels as a request handler would: a `handler` per burner and a `span_id` per burst,
// so CPU and goroutine profiles carry sample labels of low and of high cardinality.
func cpuLoop() {
	ctx := context.Background()
	for span := 1; ; span += 2 {
		pprof.Do(ctx, pprof.Labels("handler", "/fibonacci", "span_id", strconv.Itoa(span)), func(context.Context) {
			cpuFibonacci(cpuBurst)
		})
		pprof.Do(ctx, pprof.Labels("handler", "/hash", "span_id", strconv.Itoa(span+1)), func(context.Context) {
			cpuHashLoop(cpuBurst)
		})
		time.Sleep(cpuPause)
	}
}

// cpuFibonacci computes Fibonacci numbers recursively until the burst is over.
func cpuFibonacci(burst time.Duration) int {
	total := 0
	for deadline := time.Now().Add(burst); time.Now().Before(deadline); {
		total += fibonacci(22)
	}
	return total
}

func fibonacci(n int) int {
	if n < 2 {
		return n
	}
	return fibonacci(n-1) + fibonacci(n-2)
}

// cpuHashLoop hashes a buffer with SHA-256 over and over until the burst is over.
func cpuHashLoop(burst time.Duration) [sha256.Size]byte {
	buf := make([]byte, 16*1024)
	var sum [sha256.Size]byte
	for deadline := time.Now().Add(burst); time.Now().Before(deadline); {
		sum = sha256.Sum256(buf)
		copy(buf, sum[:])
	}
	return sum
}

package main

import (
	"sync"
	"time"
)

var (
	contended      sync.Mutex
	contendedCount int
)

// startMutexContention starts n goroutines that take turns holding one mutex for a while, so
// the others wait for it and the mutex profile fills.
func startMutexContention(n int) {
	for i := 0; i < n; i++ {
		go mutexContention()
	}
}

func mutexContention() {
	for {
		contended.Lock()
		contendedCount++
		time.Sleep(2 * time.Millisecond)
		contended.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// startChannelBlocking starts a slow producer and a consumer that blocks receiving from it,
// so the block profile fills.
func startChannelBlocking() {
	ch := make(chan int)
	go channelProducer(ch)
	go channelBlocking(ch)
}

func channelProducer(ch chan<- int) {
	for i := 0; ; i++ {
		time.Sleep(10 * time.Millisecond)
		ch <- i
	}
}

func channelBlocking(ch <-chan int) {
	total := 0
	for v := range ch {
		total += v
	}
	_ = total
}

// parked is never closed: goroutines waiting on it show up in every goroutine profile.
var parked = make(chan struct{})

func startParkedGoroutines(n int) {
	for i := 0; i < n; i++ {
		go parkedGoroutine()
	}
}

func parkedGoroutine() {
	<-parked
}

package main

import (
	"math/rand"
	"time"
)

const (
	ringSlots      = 512
	allocsPerBurst = 32
	allocPause     = 50 * time.Millisecond
)

// ring keeps the most recent buffers alive so the heap profile's inuse values are non-zero.
var ring [ringSlots][]byte

// allocChurn allocates buffers of 1-32 KiB (about 10 MB/s) into a bounded ring, dropping the
// oldest, so allocs keeps growing while inuse stays around a few MB.
func allocChurn() {
	next := 0
	for {
		for i := 0; i < allocsPerBurst; i++ {
			buf := make([]byte, 1024+rand.Intn(31*1024))
			buf[0] = byte(i)
			ring[next] = buf
			next = (next + 1) % ringSlots
		}
		time.Sleep(allocPause)
	}
}

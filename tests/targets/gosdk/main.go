// Command gosdk is a program profiled by the Pyroscope Go SDK (github.com/grafana/pyroscope-go): it burns
// CPU in one named function, allocates memory in another, and waits on a contended mutex and on a
// channel in two more, while the SDK pushes its CPU, memory, goroutine, mutex and block profiles to a
// server's /ingest; then it flushes the last profiles and exits. Its credential and tenant are the SDK's
// own settings (BasicAuthUser and BasicAuthPassword, AuthToken, TenantID), as a user would set them.
//
// It prints every SDK error and "sdk errors: N" at the end, and exits 1 when N > 0, so a test learns
// whether the server accepted every upload.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/pyroscope-go"
)

// sdkLogger prints what the SDK reports and counts its errors (a refused upload is one).
type sdkLogger struct{ errors atomic.Int64 }

func (l *sdkLogger) Infof(format string, args ...interface{})  {}
func (l *sdkLogger) Debugf(format string, args ...interface{}) {}
func (l *sdkLogger) Errorf(format string, args ...interface{}) {
	l.errors.Add(1)
	fmt.Printf("sdk error: "+format+"\n", args...)
}

func main() {
	server := flag.String("server", "", "Flamewatch ingester address, e.g. http://127.0.0.1:4100")
	app := flag.String("app", "gosdk", "application name (becomes service_name)")
	tenant := flag.String("tenant", "", "tenant, sent as X-Scope-OrgID (the SDK's TenantID)")
	user := flag.String("basic-auth-user", "", "the SDK's BasicAuthUser")
	password := flag.String("basic-auth-password", "", "the SDK's BasicAuthPassword")
	token := flag.String("auth-token", "", "the SDK's AuthToken, sent as a bearer token")
	tags := flag.String("tags", "", "static tags, k=v,k2=v2")
	run := flag.Duration("run", 5*time.Second, "how long to profile")
	upload := flag.Duration("upload-rate", time.Second, "how often the SDK uploads")
	flag.Parse()

	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	logger := &sdkLogger{}
	profiler, err := pyroscope.Start(pyroscope.Config{
		ApplicationName:   *app,
		ServerAddress:     *server,
		TenantID:          *tenant,
		BasicAuthUser:     *user,
		BasicAuthPassword: *password,
		AuthToken:         *token,
		Tags:              parseTags(*tags),
		UploadRate:        *upload,
		Logger:            logger,
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace, pyroscope.ProfileGoroutines,
			pyroscope.ProfileMutexCount, pyroscope.ProfileMutexDuration, pyroscope.ProfileBlockCount,
			pyroscope.ProfileBlockDuration,
		},
	})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(2)
	}
	work(*run)
	profiler.Flush(true) // upload what the last period holds and wait for it
	_ = profiler.Stop()
	fmt.Printf("sdk errors: %d\n", logger.errors.Load())
	if logger.errors.Load() > 0 {
		os.Exit(1)
	}
}

func parseTags(text string) map[string]string {
	tags := map[string]string{}
	for _, item := range strings.Split(text, ",") {
		if key, value, ok := strings.Cut(item, "="); ok {
			tags[key] = value
		}
	}
	return tags
}

// work alternates the CPU and memory hot functions until the time is up, while two goroutines
// contend for a mutex and one waits on a channel.
func work(d time.Duration) {
	deadline := time.Now().Add(d)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ticks := make(chan int)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); flamewatchSDKContend(&mu, stop) }()
	}
	wg.Add(2)
	go func() { defer wg.Done(); flamewatchSDKWait(ticks, stop) }()
	go func() { defer wg.Done(); tick(ticks, stop) }()
	defer func() { close(stop); wg.Wait() }()
	for time.Now().Before(deadline) {
		sink += flamewatchSDKHotLoop(20 * time.Millisecond)
		kept = append(kept, flamewatchSDKAllocate(64))
		if len(kept) > 256 {
			kept = kept[128:]
		}
	}
}

var (
	sink uint64
	kept [][]byte
)

// flamewatchSDKHotLoop burns CPU for d: the function a test looks for in the CPU flamegraph.
func flamewatchSDKHotLoop(d time.Duration) uint64 {
	x := uint64(1)
	for start := time.Now(); time.Since(start) < d; {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// flamewatchSDKAllocate allocates n KiB in small pieces: the function a test looks for in the memory
// flamegraphs.
//
//go:noinline
func flamewatchSDKAllocate(n int) []byte {
	var last []byte
	for i := 0; i < n; i++ {
		last = make([]byte, 1024)
		last[0] = byte(i)
	}
	return last
}

// flamewatchSDKContend holds a mutex another goroutine wants: the function a test looks for in the
// mutex profile (the unlock that made others wait).
func flamewatchSDKContend(mu *sync.Mutex, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		mu.Lock()
		time.Sleep(time.Millisecond)
		mu.Unlock()
	}
}

// flamewatchSDKWait blocks on a channel: the function a test looks for in the block profile.
func flamewatchSDKWait(ticks <-chan int, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-ticks:
		}
	}
}

func tick(ticks chan<- int, stop <-chan struct{}) {
	for i := 0; ; i++ {
		time.Sleep(5 * time.Millisecond)
		select {
		case <-stop:
			return
		case ticks <- i:
		}
	}
}

// Command replay serves saved pprof responses on many ports at once, so a collector can be measured
// against hundreds of targets without hundreds of programs. /debug/pprof/<name> answers with the file
// <dir>/<name>.pb.gz; a request with ?seconds=N is answered after N seconds, as a live CPU profile is.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", ".", "directory of <name>.pb.gz files")
	first := flag.Int("first-port", 20000, "first port to listen on")
	count := flag.Int("ports", 200, "number of consecutive ports")
	flag.Parse()

	profiles := map[string][]byte{}
	files, err := filepath.Glob(filepath.Join(*dir, "*.pb.gz"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no .pb.gz files in %s", *dir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		profiles[strings.TrimSuffix(filepath.Base(f), ".pb.gz")] = data
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := profiles[strings.TrimPrefix(r.URL.Path, "/debug/pprof/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if s, err := strconv.Atoi(r.URL.Query().Get("seconds")); err == nil && s > 0 {
			time.Sleep(time.Duration(s) * time.Second)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	})
	for p := *first; p < *first+*count; p++ {
		listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			log.Fatal(err)
		}
		go http.Serve(listener, handler)
	}
	fmt.Printf("serving %d profiles on 127.0.0.1:%d-%d\n", len(profiles), *first, *first+*count-1)
	select {}
}

// Command referrers-registry serves an in-memory OCI registry that implements the OCI 1.1
// referrers API (go-containerregistry's registry with referrers enabled), so the tests can
// exercise signature discovery through `GET /v2/<name>/referrers/<digest>`; Debian's
// docker-registry has no such endpoint.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	address := flag.String("address", "127.0.0.1:0", "address to listen on (loopback only)")
	portFile := flag.String("port-file", "", "write the chosen host:port to this file once listening")
	flag.Parse()

	host, _, err := net.SplitHostPort(*address)
	if err != nil {
		log.Fatalf("--address %q: %v", *address, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Fatalf("--address %q: only loopback addresses are served", *address)
	}
	listener, err := net.Listen("tcp", *address)
	if err != nil {
		log.Fatalf("listen on %s: %v", *address, err)
	}
	if *portFile != "" {
		if err := os.WriteFile(*portFile, []byte(listener.Addr().String()), 0o644); err != nil {
			log.Fatalf("write %s: %v", *portFile, err)
		}
	}
	log.Printf("serving an OCI registry with the referrers API on %s", listener.Addr())
	server := &http.Server{
		Handler:           registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(os.Stderr, "", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(server.Serve(listener))
}

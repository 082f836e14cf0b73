// s3get: the calibration's native S3 client. GETs the named objects of one bucket with minio-go
// (MinIO's own Go SDK), a fixed number in flight, and prints one JSON line:
// {"gets": N, "bytes": B, "seconds": S}. Object names come on stdin, one per line; each is read
// `passes` times, in the order given, by `concurrency` goroutines sharing one client.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func main() {
	endpoint := flag.String("endpoint", "127.0.0.1:9000", "host:port of the S3 server")
	bucket := flag.String("bucket", "", "bucket holding the objects")
	concurrency := flag.Int("concurrency", 16, "GETs in flight")
	passes := flag.Int("passes", 1, "times each object is read")
	flag.Parse()
	access, secret := os.Getenv("S3_ACCESS_KEY"), os.Getenv("S3_SECRET_KEY")
	if *bucket == "" || access == "" || secret == "" {
		fail(fmt.Errorf("need -bucket and S3_ACCESS_KEY, S3_SECRET_KEY in the environment"))
	}
	client, err := minio.New(*endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")})
	if err != nil {
		fail(err)
	}
	names := readNames(os.Stdin)
	jobs := make(chan string, *concurrency)
	var gets, bytes atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range jobs {
				n, err := get(client, *bucket, name)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				gets.Add(1)
				bytes.Add(n)
			}
		}()
	}
	for p := 0; p < *passes; p++ {
		for _, name := range names {
			jobs <- name
		}
	}
	close(jobs)
	wg.Wait()
	seconds := time.Since(start).Seconds()
	if err, _ := firstErr.Load().(error); err != nil {
		fail(err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"gets": gets.Load(), "bytes": bytes.Load(), "seconds": seconds})
}

func get(client *minio.Client, bucket, name string) (int64, error) {
	obj, err := client.GetObject(context.Background(), bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	return io.Copy(io.Discard, obj)
}

func readNames(r io.Reader) []string {
	var names []string
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		if line := scanner.Text(); line != "" {
			names = append(names, line)
		}
	}
	if len(names) == 0 {
		fail(fmt.Errorf("no object names on stdin"))
	}
	return names
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "s3get:", err)
	os.Exit(1)
}

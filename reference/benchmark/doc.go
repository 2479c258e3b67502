// Package benchmark holds the reference receiver's benchmarks: purge/ measures the
// retention purge of one million expired keys under concurrent deliveries (run it
// with bench.sh).
package benchmark

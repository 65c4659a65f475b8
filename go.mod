module github.com/pcor-go/pcor

go 1.26.8

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/libp2p/go-reuseport v0.4.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

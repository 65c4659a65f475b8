package athread

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// fibGo is the baseline: a goroutine per fork, joined with a WaitGroup.
func fibGo(n int) int {
	if n < 2 {
		return n
	}
	var wg sync.WaitGroup
	var x, y int
	wg.Add(2)
	go func() { defer wg.Done(); x = fibGo(n - 1) }()
	go func() { defer wg.Done(); y = fibGo(n - 2) }()
	wg.Wait()
	return x + y
}

const benchFib = 22

func BenchmarkFib(b *testing.B) {
	want := fibSeq(benchFib)
	for _, vps := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("athread/vps=%d", vps), func(b *testing.B) {
			rt, err := New(context.Background(), Config{VPs: vps, Registry: NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ctx := rt.Context()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if v, _ := Create(ctx, fibLocal, benchFib).Join(ctx); v != want {
					b.Fatal(v)
				}
			}
		})
		b.Run(fmt.Sprintf("goroutine+waitgroup/procs=%d", vps), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(vps))
			for i := 0; i < b.N; i++ {
				if v := fibGo(benchFib); v != want {
					b.Fatal(v)
				}
			}
		})
	}
}

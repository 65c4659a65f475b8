package athread_test

import (
	"context"
	"fmt"

	"github.com/pcor-go/pcor/athread"
)

// exampleFib is registered in every process (an init function does that), so
// that its threads may run in any process of a job.
var exampleFib *athread.Func[int, int]

func init() {
	exampleFib = athread.Register("example.fib", func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a, b := athread.Create(ctx, exampleFib, n-1), athread.Create(ctx, exampleFib, n-2)
		x, err := a.Join(ctx) // runs other ready threads while a is unfinished
		if err != nil {
			return 0, err
		}
		y, err := b.Join(ctx)
		return x + y, err
	}, athread.Fixed[int](), athread.Fixed[int]())
}

// A thread per call of a recursive function, on a runtime of this process
// only (FromEnv makes one that spans a job started by pcorrun).
func Example() {
	ctx := context.Background()
	rt, err := athread.New(ctx, athread.Config{VPs: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	err = rt.Run(ctx, func(ctx context.Context) error {
		v, err := athread.Create(ctx, exampleFib, 20).Join(ctx)
		if err != nil {
			return err
		}
		fmt.Println("fib(20) =", v)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println("threads created:", rt.Counters().Threads) // one a call, and main
	// Output:
	// fib(20) = 6765
	// threads created: 21892
}

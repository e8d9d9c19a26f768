package bench

import (
	"errors"
	"sync"
	"sync/atomic"
)

// forEach runs fn(0..n-1) on a bounded number of workers and joins their errors. After the
// first failure the rest are skipped: one failure already makes the setup unusable.
func forEach(n, workers int, fn func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if failed.Load() {
					continue
				}
				if errs[i] = fn(i); errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

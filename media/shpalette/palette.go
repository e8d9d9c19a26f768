// Package shpalette computes the spherical-harmonics palette of a SOG v2 file (its `shN`
// entry) on a CPU: the higher-band coefficients of every Gaussian are replaced by a label into
// a palette of up to 65 536 centroids, whose values index one shared 256-entry codebook.
//
// splat-transform trains the same palette with k-means, quick on a GPU; its CPU path is a
// brute-force search in up to 45 dimensions (minutes for tens of thousands of Gaussians). This
// package trains a two-level codebook instead: a coarse k-means of about √K clusters, then the
// fine centroids k-means'd within each coarse cluster, both on a sample; every Gaussian is then
// assigned by searching only the fine centroids of its nearest coarse clusters. All loops run
// over contiguous float32 arrays, one goroutine per core.
package shpalette

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// MaxSize is the largest palette the SOG format holds: labels are 16-bit.
const MaxSize = 1 << 16

// Size is the palette size splat-transform gives a SOG of n Gaussians: the power of two of
// n/1024 rounded down, times 1024, at most MaxSize (1 024 from 1 024 Gaussians, the most from
// 65 536). Keeping its rule keeps our renditions' size and quality comparable to its own.
func Size(n int) int {
	if n < 1 {
		return 0
	}
	s := math.Pow(2, math.Floor(math.Log2(float64(n)/1024))) * 1024
	return int(min(s, MaxSize))
}

// Coefficients is the number of harmonic coefficients per colour channel of degree d (1..3):
// 3, 8 or 15; a Gaussian carries three times as many floats (f_rest_*).
func Coefficients(d int) int { return (d+1)*(d+1) - 1 }

// Options tune the training; the zero value is the pipeline's choice.
type Options struct {
	// Probes is how many nearest coarse clusters each Gaussian's fine search visits (default 2).
	Probes int
	// Iterations of Lloyd's algorithm at each level (default 4: on 500 000 Gaussians 6 cost
	// a third more CPU for the same error).
	Iterations int
	// SampleFactor: the fine level trains on this many sample points per centroid (default 2).
	SampleFactor int
	// Seed makes the sample and the initial centroids reproducible.
	Seed uint64
}

// Palette is a trained palette: Centroids holds K rows of Dim floats (f_rest order:
// the red channel's coefficients, then green's, then blue's), Labels each Gaussian's row.
type Palette struct {
	Dim       int
	Centroids []float32
	Labels    []uint16
}

// K is the number of centroids.
func (p Palette) K() int { return len(p.Centroids) / max(p.Dim, 1) }

// Train computes a palette of k centroids (at most MaxSize, and at most n) for the n = len(x)/dim
// Gaussians whose coefficients x holds row by row.
func Train(x []float32, dim, k int, o Options) Palette {
	n := len(x) / dim
	k = min(k, n, MaxSize)
	if o.Probes <= 0 {
		o.Probes = 2
	}
	if o.Iterations <= 0 {
		o.Iterations = 4
	}
	if o.SampleFactor <= 0 {
		o.SampleFactor = 2
	}
	p := Palette{Dim: dim, Labels: make([]uint16, n)}
	if k <= 0 {
		return p
	}
	if k == n {
		// One centroid per Gaussian: exact.
		p.Centroids = append([]float32(nil), x...)
		for i := range p.Labels {
			p.Labels[i] = uint16(i)
		}
		return p
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5348))
	sample := pick(rng, n, min(n, o.SampleFactor*k))

	// Coarse level: about √K clusters (256 for the largest palette), trained on a subsample.
	c := min(256, max(1, int(math.Sqrt(float64(k)))))
	csample := sample[:min(len(sample), 64*c)]
	coarse := gather(x, dim, csample[:c])
	coarseLabels := make([]int32, len(csample))
	lloyd(x, dim, csample, coarse, coarseLabels, o.Iterations, true)

	// Fine level: each coarse cluster gets centroids in proportion to its share of the sample
	// and trains them on its own members.
	sampleLabels := make([]int32, len(sample))
	assignBrute(x, dim, sample, coarse, sampleLabels, true)
	members := make([][]int32, c)
	for i, l := range sampleLabels {
		members[l] = append(members[l], sample[i])
	}
	quota := share(members, k)
	start := make([]int, c+1)
	for j := range c {
		start[j+1] = start[j] + quota[j]
	}
	p.Centroids = make([]float32, k*dim)
	each(c, func(j int) {
		m := members[j]
		if quota[j] == 0 {
			return
		}
		rng := rand.New(rand.NewPCG(o.Seed, uint64(j)))
		rng.Shuffle(len(m), func(a, b int) { m[a], m[b] = m[b], m[a] })
		cent := p.Centroids[start[j]*dim : start[j+1]*dim]
		copy(cent, gather(x, dim, m[:quota[j]]))
		lloyd(x, dim, m, cent, make([]int32, len(m)), o.Iterations, false)
	})

	// Every Gaussian: its nearest coarse clusters, then the nearest fine centroid among theirs.
	probes := min(o.Probes, c)
	chunks(n, func(lo, hi int) {
		best := make([]int32, probes)
		bestD := make([]float32, probes)
		for i := lo; i < hi; i++ {
			v := x[i*dim : (i+1)*dim]
			for q := range best {
				best[q], bestD[q] = -1, float32(math.Inf(1))
			}
			for j := range c {
				d := dist(v, coarse[j*dim:(j+1)*dim], bestD[probes-1])
				if d < bestD[probes-1] {
					q := probes - 1
					for q > 0 && bestD[q-1] > d {
						best[q], bestD[q] = best[q-1], bestD[q-1]
						q--
					}
					best[q], bestD[q] = int32(j), d
				}
			}
			label, bound := 0, float32(math.Inf(1))
			for _, j := range best {
				if j < 0 {
					continue
				}
				for f := start[j]; f < start[j+1]; f++ {
					if d := dist(v, p.Centroids[f*dim:(f+1)*dim], bound); d < bound {
						label, bound = f, d
					}
				}
			}
			p.Labels[i] = uint16(label)
		}
	})

	// Each used centroid becomes the mean of what it labels: the assignment's error can only fall.
	sum := make([]float64, k*dim)
	cnt := make([]int32, k)
	for i, l := range p.Labels {
		cnt[l]++
		row := sum[int(l)*dim : (int(l)+1)*dim]
		for j, v := range x[i*dim : (i+1)*dim] {
			row[j] += float64(v)
		}
	}
	for f := range k {
		if cnt[f] == 0 {
			continue
		}
		for j := range dim {
			p.Centroids[f*dim+j] = float32(sum[f*dim+j] / float64(cnt[f]))
		}
	}
	return p
}

// pick draws m distinct indices of [0, n) (a partial Fisher–Yates shuffle).
func pick(rng *rand.Rand, n, m int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	for i := range m {
		j := i + rng.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	return idx[:m:m]
}

// gather copies the rows idx of x.
func gather(x []float32, dim int, idx []int32) []float32 {
	out := make([]float32, 0, len(idx)*dim)
	for _, i := range idx {
		out = append(out, x[int(i)*dim:(int(i)+1)*dim]...)
	}
	return out
}

// share splits k centroids among the clusters in proportion to their members (largest
// remainders), never more than a cluster has members; the sample holds at least k points.
func share(members [][]int32, k int) []int {
	total := 0
	for _, m := range members {
		total += len(m)
	}
	quota := make([]int, len(members))
	rem := make([]float64, len(members))
	given := 0
	for j, m := range members {
		exact := float64(k) * float64(len(m)) / float64(total)
		quota[j] = min(int(exact), len(m))
		rem[j] = exact - float64(quota[j])
		given += quota[j]
	}
	order := make([]int, len(members))
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for given < k {
		progress := false
		for _, j := range order {
			if given == k {
				break
			}
			if quota[j] < len(members[j]) {
				quota[j]++
				given++
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	return quota
}

// lloyd runs iters rounds of k-means over the points idx of x, starting from cent (updated in
// place); labels receives each point's centroid. A centroid left without points keeps its place.
func lloyd(x []float32, dim int, idx []int32, cent []float32, labels []int32, iters int, parallel bool) {
	k := len(cent) / dim
	sum := make([]float64, len(cent))
	cnt := make([]int, k)
	for range iters {
		assignBrute(x, dim, idx, cent, labels, parallel)
		clear(sum)
		clear(cnt)
		for i, l := range labels {
			cnt[l]++
			row := sum[int(l)*dim : (int(l)+1)*dim]
			for j, v := range x[int(idx[i])*dim : (int(idx[i])+1)*dim] {
				row[j] += float64(v)
			}
		}
		for f := range k {
			if cnt[f] == 0 {
				continue
			}
			for j := range dim {
				cent[f*dim+j] = float32(sum[f*dim+j] / float64(cnt[f]))
			}
		}
	}
}

// assignBrute labels each point idx of x with its nearest centroid of cent.
func assignBrute(x []float32, dim int, idx []int32, cent []float32, labels []int32, parallel bool) {
	k := len(cent) / dim
	run := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := x[int(idx[i])*dim : (int(idx[i])+1)*dim]
			best, bound := 0, float32(math.Inf(1))
			for f := range k {
				if d := dist(v, cent[f*dim:(f+1)*dim], bound); d < bound {
					best, bound = f, d
				}
			}
			labels[i] = int32(best)
		}
	}
	if parallel {
		chunks(len(idx), run)
	} else {
		run(0, len(idx))
	}
}

// dist is the squared distance of a and b, or some partial sum at least bound once it gets
// there: a candidate that cannot win stops early (most do, after a few coefficients).
func dist(a, b []float32, bound float32) float32 {
	b = b[:len(a)]
	var s float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		d0, d1, d2, d3 := a[i]-b[i], a[i+1]-b[i+1], a[i+2]-b[i+2], a[i+3]-b[i+3]
		d4, d5, d6, d7 := a[i+4]-b[i+4], a[i+5]-b[i+5], a[i+6]-b[i+6], a[i+7]-b[i+7]
		s += (d0*d0 + d1*d1 + d2*d2 + d3*d3) + (d4*d4 + d5*d5 + d6*d6 + d7*d7)
		if s >= bound {
			return s
		}
	}
	for ; i < len(a); i++ {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

// chunks runs fn over [0, n) in pieces, one goroutine per core taking pieces until none is left.
func chunks(n int, fn func(lo, hi int)) {
	const piece = 1024
	pieces := (n + piece - 1) / piece
	each(pieces, func(p int) { fn(p*piece, min(n, (p+1)*piece)) })
}

// each calls fn(0..n-1) from one goroutine per core (GOMAXPROCS), each taking the next index.
func each(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

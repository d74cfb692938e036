package store

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The figures a lagSummer keeps are bounded whatever the number of
// cursors, and what it reports stays the exact summary's: the same Avg,
// Min and Max, and a median within 0.2% (exact for whole numbers below
// 512).
func TestLagSummerIsBoundedAndCloseToTheExactSummary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]struct {
		whole bool
		n     int
		gen   func() float64
	}{
		"few offsets, exact":         {true, 1000, func() float64 { return float64(rng.IntN(50)) }},
		"exactly the exact limit":    {true, exactLagValues, func() float64 { return float64(rng.IntN(1e6)) }},
		"mostly zero offsets":        {true, 3 * exactLagValues, func() float64 { return float64(max(rng.IntN(40)-36, 0)) }},
		"small whole offsets":        {true, 3*exactLagValues + 1, func() float64 { return float64(rng.IntN(500)) }},
		"large offsets":              {true, 4 * exactLagValues, func() float64 { return float64(rng.Int64N(1 << 40)) }},
		"ages in seconds":            {false, 4*exactLagValues + 1, func() float64 { return rng.ExpFloat64() * 3600 }},
		"ages below a second":        {false, 2 * exactLagValues, func() float64 { return rng.Float64() * 1e-3 }},
		"every figure the same":      {false, 2 * exactLagValues, func() float64 { return 7.25 }},
		"zeros and one huge outlier": {true, 2 * exactLagValues, func() float64 { return 0 }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			vals := make([]float64, c.n)
			l := lagSummer{whole: c.whole}
			for i := range vals {
				vals[i] = c.gen()
				if name == "zeros and one huge outlier" && i == c.n/3 {
					vals[i] = 1e12
				}
				l.add(vals[i])
			}
			if c.n > exactLagValues && (l.vals != nil || len(l.buckets) > 64*lagSubBuckets) {
				t.Fatalf("keeps %d figures and %d buckets for %d cursors", len(l.vals), len(l.buckets), c.n)
			}
			got, want := l.summary(), summarise(vals)
			if got.Min != want.Min || got.Max != want.Max {
				t.Fatalf("min/max %v/%v, exact %v/%v", got.Min, got.Max, want.Min, want.Max)
			}
			if math.Abs(got.Avg-want.Avg) > 1e-9*math.Max(1, math.Abs(want.Avg)) {
				t.Fatalf("avg %v, exact %v", got.Avg, want.Avg)
			}
			tol := want.Median / 512
			if c.n <= exactLagValues || (c.whole && want.Max < 512) {
				tol = 0
			}
			if math.Abs(got.Median-want.Median) > tol {
				t.Fatalf("median %v, exact %v (tolerance %v)", got.Median, want.Median, tol)
			}
		})
	}
}

// Bucket keys follow the figures' order, so walking the keys in order
// walks the figures in order.
func TestLagBucketsFollowTheFiguresOrder(t *testing.T) {
	prev := lagBucket(0)
	for _, v := range []float64{1e-9, 1e-6, 0.3, 0.5, 0.51, 1, 1.001, 2, 3, 3.5, 511, 512, 1e6, 1e15} {
		k := lagBucket(v)
		if k < prev {
			t.Fatalf("bucket of %v (%d) sorts before the previous figure's (%d)", v, k, prev)
		}
		if m := lagBucketMiddle(k); math.Abs(m-v) > v/512 {
			t.Fatalf("bucket of %v has middle %v", v, m)
		}
		prev = k
	}
}

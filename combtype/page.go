package combtype

// Pages of the listings. A listing that can grow with partitions, groups
// or dead letters is read a bounded page at a time, so one request costs
// the page, not the whole set.

const (
	// DefaultPageLimit is the page size of a paged listing asked for no
	// limit, once the set is larger than MaxPageLimit.
	DefaultPageLimit = 1000
	// MaxPageLimit is the largest page a listing hands out in one reply.
	MaxPageLimit = 1000
	// DefaultQueuePageLimit is DefaultPageLimit for a queue's partitions
	// (the queue details): a queue that fits in MaxPageLimit comes whole,
	// as Queen answers; a larger one is paged anyway, and a page of it
	// costs its partitions' counts and segment times, so it comes in
	// pages of this size unless a limit is asked.
	DefaultQueuePageLimit = 100
	// MaxPageOffset is the deepest offset the listings that hand out
	// positions (after) accept: offset walks every row before it, after
	// costs the page only.
	MaxPageOffset = 10000
)

// PageInfo describes the page a listing returned.
type PageInfo struct {
	// Total is the number of rows of the whole listing; -1 when it was
	// not counted.
	Total int64
	// More is true when another page follows.
	More bool
	// Next is the After of the following page, on the listings that page
	// by position; "" on the last page and on listings paged by offset.
	Next string
	// Limit is the page size the listing chose when asked for none (a
	// Page with Limit 0); 0 when it took the one asked for.
	Limit int
	// Unsummed is the number of queues a listing made from background
	// sums left out because their first sum is not made yet (the lagging
	// listing); 0 on the others.
	Unsummed int
}

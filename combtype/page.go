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
}

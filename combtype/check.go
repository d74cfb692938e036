package combtype

import (
	"fmt"
	"strings"
)

// A Finding is one thing Check found wrong in a database.
type Finding struct {
	// Check names the rule broken: "integrity", "checksum", "tiling",
	// "created_at", "bounds", "orphan" or "quarantine" (a segment a claim
	// put aside; see ListQuarantine).
	Check     string
	Tenant    string // "" for the default tenant or when not about a queue
	Queue     string // "" when not about one queue
	Partition string // "" when not about one partition
	// From and To are the offsets concerned when HasOffsets.
	From, To   int64
	HasOffsets bool
	Detail     string
}

// CheckReport is what Check found.
type CheckReport struct {
	SchemaVersion int64
	Queues        int64
	Partitions    int64
	Segments      int64
	Frames        int64
	Findings      []Finding
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Check + ":")
	if f.Queue != "" {
		b.WriteString(" queue ")
		if f.Tenant != "" {
			b.WriteString(f.Tenant + "/")
		}
		b.WriteString(f.Queue)
		if f.Partition != "" {
			b.WriteString(" partition " + f.Partition)
		}
	}
	if f.HasOffsets {
		if f.From == f.To {
			fmt.Fprintf(&b, " offset %d", f.From)
		} else {
			fmt.Fprintf(&b, " offsets %d-%d", f.From, f.To)
		}
	}
	if f.Queue != "" || f.HasOffsets {
		b.WriteString(":")
	}
	b.WriteString(" " + f.Detail)
	return b.String()
}

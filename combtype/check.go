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
	HasOffsets bool   // From and To are set
	Detail     string // what is wrong, in words for an operator
}

// CheckReport is what Check found. The counts are what the check read,
// for the operator to see it covered the file.
type CheckReport struct {
	SchemaVersion int64     // the newest migration applied to the file
	Queues        int64     // queues, of every tenant
	Partitions    int64     // partitions, of every tenant
	Segments      int64     // segments whose checksum was verified
	Frames        int64     // messages those segments hold
	Findings      []Finding // empty when the file is sound
}

// RestoreReport is what a restore of a backup did (broker.RestoreFile).
type RestoreReport struct {
	// Check is the check of the copy put in place. When it has findings
	// nothing was put in place.
	Check *CheckReport
	// Bytes is the size of the file put in place.
	Bytes int64
	// Aside is the name the database that was at the path now has, its
	// -wal and -shm beside it under that name; empty when the path held
	// no database.
	Aside string
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

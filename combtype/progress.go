package combtype

// Progress is how far a long check or backup has come, for an operator
// watching it. Done counts Unit ("bytes", "segments" or "checks") out of
// Total; Done < 0 means the phase cannot tell how far it is, only that it
// runs.
type Progress struct {
	// Phase names the step: Check's "integrity", "segments" and "rows";
	// a backup's "copy" and "sync".
	Phase string
	// Done counts Unit so far, Total the phase's whole; Done < 0 when
	// the phase cannot tell how far it is.
	Done, Total int64
	Unit        string // UnitBytes, UnitSegments or UnitChecks
}

// Units of Progress.
const (
	UnitBytes    = "bytes"
	UnitSegments = "segments"
	UnitChecks   = "checks"
)

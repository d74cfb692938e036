package combtype

// Progress is how far a long check or backup has come, for an operator
// watching it. Done counts Unit ("bytes", "segments" or "checks") out of
// Total; Done < 0 means the phase cannot tell how far it is, only that it
// runs.
type Progress struct {
	Phase       string
	Done, Total int64
	Unit        string
}

// Units of Progress.
const (
	UnitBytes    = "bytes"
	UnitSegments = "segments"
	UnitChecks   = "checks"
)

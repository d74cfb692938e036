package store

import "context"

// SubmitPanic submits a write whose apply panics, as a fault of comb's
// own code in the writer would.
func (s *Store) SubmitPanic(ctx context.Context) error {
	return s.submit(ctx, &writeOp{apply: func(*wtx) error { panic("a fault in an op") }})
}

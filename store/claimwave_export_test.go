package store

// SetClaimWaves turns the fusing of claims (claimWaves) on or off, for
// comparing a wave with the same claims applied one by one. Call it before
// the store is used.
func (s *Store) SetClaimWaves(on bool) { s.noWaves = !on }

// WriterStatements is how many statements the writer's transactions ran.
func (s *Store) WriterStatements() int64 { return s.wstatements.Load() }

package store

// ErrLockHeld answers a long-poll's claim the writer did not try.
var ErrLockHeld = errLockHeld

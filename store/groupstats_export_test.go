package store

// StopRefresher is stopRefresher for the tests of package store_test.
func StopRefresher(s *Store) { stopRefresher(s) }

package store

import (
	"context"
	"fmt"
	"time"
)

// Commits of other programs. The writer keeps rows in memory between its
// commits (queues and partitions by name with their last offsets, which
// groups are subscribed, how many queues there are, the next ids and
// segment sequence), on the premise that nothing else writes the file
// (docs/operations.md says to open it read-only). A sqlite3 session that
// deletes a queue row while the server runs broke that premise quietly:
// every later push to the queue was answered 201 and written under a
// queue that no longer existed, which no pop or listing could reach (1,165
// answered pushes in a probe); a backup restored into the served file
// left gaps where the writer went on from offsets it remembered.
//
// SQLite counts, per connection, the commits other connections made
// (PRAGMA data_version). The writer reads it at the start of each of its
// transactions, where no other program can be committing, and when it has
// moved it forgets what it keeps and reads the rows again as it needs
// them: the push above then makes the queue again and its messages are
// delivered. The server's own readers never commit, so only another
// program moves it.

// outsideLogEvery bounds how often a run of other programs' commits is
// logged.
const outsideLogEvery = time.Minute

// noticeOutsideCommits forgets what the writer keeps in memory if another
// program committed to the file since the writer's last look. It runs in
// the writer's transaction, before anything is read.
func (s *Store) noticeOutsideCommits(ctx context.Context) error {
	st, err := s.wstmts.get(ctx, "PRAGMA data_version")
	if err != nil {
		return fmt.Errorf("read data version: %w", err)
	}
	var v int64
	if st != nil {
		err = st.QueryRowContext(ctx).Scan(&v)
	} else {
		err = s.wconn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
	}
	if err != nil {
		return fmt.Errorf("read data version: %w", err)
	}
	if v == s.dataVersion {
		return nil
	}
	s.dataVersion = v
	s.stats.OutsideCommits.Add(1)
	s.rows.forget()
	s.subs.forget() // settled as the transaction ends
	s.queues.known = false
	s.groups.known = false
	// Idle marks hold only while the sequence they were taken at does
	// (idle.go); it stays even.
	s.commitSeq.Add(2)
	s.idle.forgetAll()
	if s.nextIDs, err = idFloors(ctx, s.wconn); err != nil {
		return err
	}
	if s.segSeq, err = segmentSeq(ctx, s.wconn); err != nil {
		return err
	}
	if err := s.loadIDEpoch(ctx); err != nil {
		return err
	}
	if now := time.Now(); now.Sub(s.outsideLogged) >= outsideLogEvery {
		s.outsideLogged = now
		s.log.Warn("another program committed to the database file; the server reads again the rows it keeps in memory "+
			"(write to it only through comb: docs/operations.md)", "path", s.path)
	}
	return nil
}

// readDataVersion records the data version the writer starts from.
func (s *Store) readDataVersion(ctx context.Context) error {
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&s.dataVersion); err != nil {
		return fmt.Errorf("read data version: %w", err)
	}
	return nil
}

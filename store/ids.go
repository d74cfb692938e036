package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// messageID is the id of the message at offset in the partition whose
// uuid is partitionUUID, in a database whose ids are derived with epoch
// (idEpochKey). No column stores it: it is derived from the position.
//
// It is a UUID of version 8 ("custom"). The first 9 bytes come from a hash
// of the partition's uuid, which is random and never reused, so two
// databases, or a queue deleted and created again under the same name,
// never hand out the same id for different messages. The last 7 bytes are
// the offset, big-endian, so within a partition ids sort in offset order
// (Queen's JavaScript streams runner orders a batch by id). 2^56 offsets
// per partition is more than any device writes.
func messageID(epoch, partitionUUID string, offset int64) string {
	return messageIDs(epoch, partitionUUID).at(offset)
}

// messageIDPrefix is the part of a partition's message ids that comes from
// its uuid: a commit hashes it once per partition, not once per message.
type messageIDPrefix [9]byte

func messageIDs(epoch, partitionUUID string) messageIDPrefix {
	// The file comb created keeps the empty epoch, and with it the ids
	// every earlier version derived.
	h := sha256.Sum256([]byte(partitionUUID))
	if epoch != "" {
		h = sha256.Sum256([]byte(partitionUUID + "/" + epoch))
	}
	var p messageIDPrefix
	copy(p[:], h[:9])
	p[6] = 0x80 | p[6]&0x0f // version 8
	p[8] = 0x80 | p[8]&0x3f // RFC 9562 variant
	return p
}

// at is the id of the message at offset.
func (p messageIDPrefix) at(offset int64) string {
	var b [16]byte
	copy(b[:9], p[:])
	var off [8]byte
	binary.BigEndian.PutUint64(off[:], uint64(offset))
	copy(b[9:], off[1:])
	return uuid.UUID(b).String()
}

// newLeaseID is the id of a lease a claim hands out: a UUIDv7, so the ids
// of one commit sort next to each other and after every earlier one. Each
// lease is an entry of cursors_lease, keyed by its id; with random (v4)
// ids a wave of a thousand claims inserted into a thousand places of that
// index, touching nearly every one of its pages, each of which the wave
// journaled (its savepoint) and the commit wrote to the WAL. In time
// order they land on the index's last few pages (BenchmarkWakeManyGroups;
// bench/results/wake-claims-2026-12-02.md). The ids stay opaque to
// clients (docs/wire.md) and keep 62 random bits.
func newLeaseID() string { return newUUID() }

// idEpochKey keys, in settings, the epoch of a database's message ids. An
// id is its message's partition and offset, and a copy of the database
// goes on from the copy's offsets: a backup put back in place handed the
// ids of the messages pushed after it was taken to other messages, which
// a consumer that remembers the ids it processed would then skip. Each
// copy comb writes (comb backup, the online backup, comb restore's copy)
// takes an epoch of its own, so no id it hands out is one its source
// handed out after the copy; the messages the copy holds get new ids too,
// and come again to such a consumer as the restore's redeliveries do. A
// dead letter keeps the id it was stored with.
const idEpochKey = "message_id_epoch"

// newIDEpoch is a new epoch for a copy: random, so two copies of one
// source differ as well.
func newIDEpoch() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readIDEpoch reads the epoch of the database q reads; "" when it has none.
func readIDEpoch(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, idEpochKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the message id epoch: %w", err)
	}
	return v, nil
}

// messageIDs is the id prefix of the partition partitionUUID in this
// database.
func (s *Store) messageIDs(partitionUUID string) messageIDPrefix {
	return messageIDs(*s.idEpoch.Load(), partitionUUID)
}

// messageID is the id of the message at offset of the partition
// partitionUUID in this database.
func (s *Store) messageID(partitionUUID string, offset int64) string {
	return s.messageIDs(partitionUUID).at(offset)
}

// loadIDEpoch reads the database's epoch into the store: at open, and
// after another program's commits, which may have put a copy's pages in
// place (sqlite3's .restore of a backup into the served file).
func (s *Store) loadIDEpoch(ctx context.Context) error {
	e, err := readIDEpoch(ctx, s.wconn)
	if err != nil {
		return err
	}
	s.idEpoch.Store(&e)
	return nil
}
